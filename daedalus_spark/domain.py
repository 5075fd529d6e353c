"""Knowledge vocabulary: the immutable values that flow through one MAPE-K tick (observation in, decision out)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True)
class WorkerSeries:
    """One worker's samples since the last tick, oldest first, one per `Observation.step_s`."""

    worker_id: str
    throughput_per_s: tuple[float, ...]
    utilization_ratio: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.throughput_per_s) != len(self.utilization_ratio):
            raise ValueError(
                f"worker {self.worker_id}: {len(self.throughput_per_s)} throughput samples but "
                f"{len(self.utilization_ratio)} utilization samples"
            )


@dataclass(frozen=True)
class Observation:
    """Everything the monitor saw since the previous tick.

    `workload_per_s` holds the source's arrival rate (records/s), oldest first, one sample per `step_s`, ending at
    `time_s`. Worker series use the same step. `uptime_s` is the time since the job (re)started processing.
    """

    time_s: float
    step_s: float
    workload_per_s: tuple[float, ...]
    workers: tuple[WorkerSeries, ...]
    consumer_lag_records: float
    scaleout: int
    uptime_s: float

    @property
    def worker_ids(self) -> tuple[str, ...]:
        return tuple(w.worker_id for w in self.workers)


@dataclass(frozen=True)
class Forecast:
    """Predicted workload (records/s) at `start_s + k * step_s` for k = 0..len-1; never negative."""

    start_s: float
    step_s: float
    values_per_s: tuple[float, ...]
    model: str

    @property
    def horizon_s(self) -> float:
        return len(self.values_per_s) * self.step_s

    def max_within(self, seconds: float) -> float:
        """Highest predicted workload over the next `seconds` (at least the first step)."""
        if not self.values_per_s:
            return 0.0
        steps = max(1, math.ceil(seconds / self.step_s)) if math.isfinite(seconds) else len(self.values_per_s)
        return max(self.values_per_s[:steps])

    def per_second(self) -> tuple[float, ...]:
        """The forecast expanded to one value per second (each step's value repeated)."""
        repeat = max(1, round(self.step_s))
        return tuple(v for v in self.values_per_s for _ in range(repeat))


@dataclass(frozen=True)
class WorkerCapacity:
    """A worker's learned model: throughput = intercept + slope * utilization, and what it can reach under skew."""

    worker_id: str
    samples: int
    intercept_per_s: float
    slope_per_s: float
    own_capacity_per_s: float  # at the expected maximum utilization, as if it received all the load it wanted
    load_share_ratio: float  # its share of the job's throughput in the latest window
    capacity_per_s: float  # what it can reach before the most constrained worker saturates
    method: str  # "regression" (its own), "pooled" (all workers' slope), "ratio", or "peer_mean" (no usable data)

    @property
    def skew_factor_ratio(self) -> float:
        return self.capacity_per_s / self.own_capacity_per_s if self.own_capacity_per_s > 0 else 1.0


@dataclass(frozen=True)
class CapacityTable:
    """Capacity (records/s) of the current scale-out and of every scale-out 1..max."""

    current_scaleout: int
    current_per_s: float
    per_scaleout_per_s: tuple[float, ...]  # index n-1 holds scale-out n
    observed_scaleouts: frozenset[int]
    workers: tuple[WorkerCapacity, ...]

    def at(self, scaleout: int) -> float:
        if scaleout == self.current_scaleout:
            return self.current_per_s
        return self.per_scaleout_per_s[scaleout - 1]

    @property
    def max_scaleout(self) -> int:
        return len(self.per_scaleout_per_s)


class Reason(StrEnum):
    """Why a tick decided what it decided; one per branch of the planner and the controller."""

    RECENT_RESCALE_STILL_FINE = "recent_rescale_still_fine"
    CURRENT_IS_SMALLEST_VALID = "current_is_smallest_valid"
    SCALE_OUT_SMALLEST_VALID = "scale_out_smallest_valid"
    SCALE_IN_SMALLEST_VALID = "scale_in_smallest_valid"
    SCALE_IN_DEFERRED_LAG = "scale_in_deferred_lag"
    NO_VALID_SCALEOUT_USE_MAX = "no_valid_scaleout_use_max"
    COOLDOWN = "cooldown_after_rescale"
    SKIP_MISSING_DATA = "skip_missing_data"
    SKIP_WARMUP = "skip_warmup"


@dataclass(frozen=True)
class Decision:
    """The planner's answer: an absolute target scale-out, why, and the numbers that decided it."""

    time_s: float
    current_scaleout: int
    target_scaleout: int
    reason: Reason
    evidence: dict[str, float | int | str | None] = field(default_factory=dict, compare=False)
    notes: tuple[str, ...] = ()  # one line per scale-out examined and rejected, for people
    actuation: str | None = None  # what the actuator did with a rescale (execute.port.Outcome), None if not asked
    actuation_detail: str = ""

    @property
    def rescale(self) -> bool:
        return self.target_scaleout != self.current_scaleout


@dataclass(frozen=True)
class Recovery:
    """A measured recovery after a rescale (§3.5): how long the anomaly lasted from the rescale on."""

    rescale_time_s: float
    direction: str  # "out" or "in"
    from_scaleout: int
    to_scaleout: int
    recovery_s: float
    predicted_downtime_s: float
