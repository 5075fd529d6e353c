"""Simulation: the Flink Kubernetes operator autoscaler's rule (FLIP-271), applied to the job's one vertex."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.sim.job import SimulatedJob


@dataclass(frozen=True)
class FlinkSettings:
    """The operator's defaults (job.autoscaler.*), each overridable."""

    target_utilization_ratio: float = 0.7  # target.utilization
    utilization_boundary_ratio: float = 0.3  # target.utilization.boundary
    catch_up_duration_s: float = 1800.0  # catch-up.duration (30 min)
    restart_time_s: float = 300.0  # restart.time (5 min)
    stabilization_interval_s: int = 300  # stabilization.interval (5 min)
    scale_down_interval_s: int = 3600  # scale-down.interval (1 h)
    metrics_window_s: int = 900  # metrics.window (15 min)
    scale_down_max_factor: float = 0.6  # scale-down.max-factor
    reconcile_interval_s: int = 60  # kubernetes.operator.reconcile.interval
    align_to_partitions: bool = True  # sources: prefer a parallelism that divides the partition count


def target_capacity_per_s(
    *, input_per_s: float, lag_records: float, utilization_ratio: float, s: FlinkSettings
) -> float:
    """Processing capacity the job should have: input at the target utilization, plus the backlog and the
    records arriving during a restart, caught up within the catch-up duration."""
    catch_up = 0.0
    if s.catch_up_duration_s > 0:
        catch_up = (lag_records + input_per_s * s.restart_time_s) / s.catch_up_duration_s
    return input_per_s / utilization_ratio + catch_up


def flink_parallelism(
    *, current: int, true_rate_per_s: float, input_per_s: float, lag_records: float, s: FlinkSettings
) -> int:
    """The recommended parallelism (current if the true rate is within the utilization boundary)."""
    upper = target_capacity_per_s(
        input_per_s=input_per_s,
        lag_records=lag_records,
        utilization_ratio=min(1.0, s.target_utilization_ratio + s.utilization_boundary_ratio),
        s=s,
    )
    lower = target_capacity_per_s(
        input_per_s=input_per_s,
        lag_records=lag_records,
        utilization_ratio=max(1e-3, s.target_utilization_ratio - s.utilization_boundary_ratio),
        s=s,
    )
    if upper <= true_rate_per_s <= lower:
        return current
    target = target_capacity_per_s(
        input_per_s=input_per_s, lag_records=lag_records, utilization_ratio=s.target_utilization_ratio, s=s
    )
    factor = max(target / true_rate_per_s, 1.0 - s.scale_down_max_factor)
    return max(1, math.ceil(current * factor - 1e-9))


def align_to_partitions(parallelism: int, partitions: int, limit: int) -> int:
    """Smallest parallelism >= the given one that divides the partition count evenly (within the limit)."""
    for p in range(parallelism, min(partitions, limit) + 1):
        if partitions % p == 0:
            return p
    return min(parallelism, limit)


@dataclass
class FlinkPolicy:
    """Metrics over a full window after the stabilization interval; scale-downs delayed and merged."""

    settings: FlinkSettings
    name: str = "flink"
    min_scaleout: int = 1
    max_scaleout: int = 12
    sync_interval_s: int | None = None
    _down_since_s: int | None = None
    _down_max: int = 0

    def __post_init__(self) -> None:
        self.sync_interval_s = self.settings.reconcile_interval_s

    def window(self, job: SimulatedJob) -> slice | None:
        """The metric window, or None until stabilization plus a full window have passed since the restart."""
        start = job.restart_end_s + self.settings.stabilization_interval_s
        if not job.processing or job.now_s - start < self.settings.metrics_window_s:
            return None
        return slice(job.now_s - self.settings.metrics_window_s, job.now_s)

    def recommend(self, job: SimulatedJob) -> int | None:
        w = self.window(job)
        if w is None:
            return None
        busy_max = float(np.max(job.busy_ratio[w, : job.scaleout].mean(axis=0)))  # busy-time aggregator MAX
        if busy_max <= 1e-6:
            return None
        true_rate = float(job.processed_per_s[w].mean()) / busy_max
        p = flink_parallelism(
            current=job.scaleout,
            true_rate_per_s=true_rate,
            input_per_s=float(job.workload_per_s[w].mean()),
            lag_records=job.lag_records(),
            s=self.settings,
        )
        if self.settings.align_to_partitions:
            p = align_to_partitions(p, job.model.partitions, self.max_scaleout)
        return min(max(p, self.min_scaleout), self.max_scaleout)

    def decide(self, job: SimulatedJob) -> int | None:
        p = self.recommend(job)
        if p is None:
            return None
        return self.delay_scale_down(job.now_s, job.scaleout, p)

    def delay_scale_down(self, now_s: int, current: int, recommended: int) -> int:
        """Scale-ups apply at once; a scale-down applies the highest recommendation once the interval passed."""
        if recommended >= current:
            self._down_since_s = None
            return recommended
        if self._down_since_s is None:
            self._down_since_s, self._down_max = now_s, recommended
            return current
        self._down_max = max(self._down_max, recommended)
        if now_s - self._down_since_s < self.settings.scale_down_interval_s:
            return current
        self._down_since_s = None
        return self._down_max
