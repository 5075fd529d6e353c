"""Workload: trace pacing — how many records are due by a given time (pure; the clock is injected)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Pacer:
    """Cumulative records due at elapsed wall time t for a `second|count` trace.

    `compression` c replays c trace seconds per wall second (rates multiply by c); `scale` multiplies counts.
    Within a trace second records are due linearly, so pacing is smooth rather than bursty.
    """

    trace: np.ndarray
    compression: float = 1.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.compression <= 0 or self.scale < 0:
            raise ValueError("compression must be > 0 and scale >= 0")
        self._cumulative = np.concatenate(([0.0], np.cumsum(np.asarray(self.trace, dtype=float) * self.scale)))

    @property
    def duration_s(self) -> float:
        """Wall seconds the whole trace takes."""
        return len(self.trace) / self.compression

    @property
    def total(self) -> int:
        return math.floor(float(self._cumulative[-1]))

    def due(self, elapsed_s: float) -> int:
        """Records that should have been produced `elapsed_s` wall seconds after the start."""
        trace_s = max(0.0, elapsed_s) * self.compression
        whole = int(trace_s)
        if whole >= len(self.trace):
            return self.total
        frac = trace_s - whole
        low, high = float(self._cumulative[whole]), float(self._cumulative[whole + 1])
        return math.floor(low + frac * (high - low))

    def rate_at(self, elapsed_s: float) -> float:
        """Target records per wall second at `elapsed_s`."""
        index = int(max(0.0, elapsed_s) * self.compression)
        if index >= len(self.trace):
            return 0.0
        return float(self.trace[index]) * self.scale * self.compression


@dataclass
class PaceKeeper:
    """Tracks produced vs. due records and says when the producer falls behind its target."""

    pacer: Pacer
    tolerance_s: float = 1.0
    max_batch: int = 50_000
    produced: int = 0

    def next_batch(self, elapsed_s: float) -> int:
        """Records to produce now (bounded, so a slow producer keeps reporting rather than bursting)."""
        return max(0, min(self.max_batch, self.pacer.due(elapsed_s) - self.produced))

    def record(self, count: int) -> None:
        self.produced += count

    def behind(self, elapsed_s: float) -> int:
        return max(0, self.pacer.due(elapsed_s) - self.produced)

    def keeping_up(self, elapsed_s: float) -> bool:
        """Within `tolerance_s` seconds of target rate (at least one record of slack)."""
        allowed = max(1.0, self.pacer.rate_at(elapsed_s) * self.tolerance_s)
        return self.behind(elapsed_s) <= allowed

    def finished(self, elapsed_s: float) -> bool:
        return elapsed_s >= self.pacer.duration_s and self.produced >= self.pacer.total
