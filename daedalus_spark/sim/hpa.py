"""Simulation: the Kubernetes Horizontal Pod Autoscaler's algorithm on average CPU utilization (baseline)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from daedalus_spark.sim.job import SimulatedJob


def hpa_recommendation(current: int, utilization_ratio: float, target_ratio: float, tolerance: float = 0.1) -> int:
    """ceil(current x utilization / target), unless the ratio is within the tolerance of 1."""
    ratio = utilization_ratio / target_ratio
    if abs(ratio - 1.0) <= tolerance:
        return current
    return max(1, math.ceil(current * ratio))


def scale_up_limit(current: int, *, percent: float = 100.0, pods: int = 4) -> int:
    """The default scale-up behavior: the larger of +100 % and +4 pods per period."""
    return max(math.floor(current * (1.0 + percent / 100.0)), current + pods)


@dataclass
class HpaPolicy:
    """HPA v2 with default behavior: 15-s sync, 0.1 tolerance, 300-s scale-down stabilization (max
    recommendation over the window), scale-up limited to max(+100 %, +4 pods) per 15 s, no scale-up window."""

    target_ratio: float
    name: str = ""
    min_scaleout: int = 1
    max_scaleout: int = 12
    sync_interval_s: int | None = 15
    tolerance: float = 0.1
    scale_down_window_s: int = 300
    metric_window_s: int = 60  # metrics-server's CPU is an average over its resolution
    _history: deque[tuple[int, int]] = field(default_factory=deque, repr=False)

    def __post_init__(self) -> None:
        self.name = self.name or f"hpa:{self.target_ratio:g}"

    def average_cpu(self, job: SimulatedJob) -> float | None:
        """Mean CPU over the ready pods and the metric window; None while the job restarts."""
        if not job.processing or job.uptime_s() < 1:
            return None
        t0 = max(job.now_s - self.metric_window_s, job.restart_end_s)
        return float(np.mean(job.cpu_ratio[t0 : job.now_s, : job.scaleout]))

    def decide(self, job: SimulatedJob) -> int | None:
        cpu = self.average_cpu(job)
        if cpu is None:
            return None
        return self.step(job.now_s, job.scaleout, cpu)

    def step(self, now_s: int, current: int, cpu_ratio: float) -> int:
        """One sync: recommendation, scale-down stabilization, scale-up rate limit, bounds."""
        raw = hpa_recommendation(current, cpu_ratio, self.target_ratio, self.tolerance)
        raw = min(max(raw, self.min_scaleout), self.max_scaleout)
        self._history.append((now_s, raw))
        while self._history and self._history[0][0] <= now_s - self.scale_down_window_s:
            self._history.popleft()
        desired = raw
        if raw < current:
            desired = min(current, max(r for _, r in self._history))
        if desired > current:
            desired = min(desired, scale_up_limit(current))
        return desired
