"""Domain: the immutable values that flow through one MAPE-K tick (observation in, decision out)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from daedalus_spark.evidence import Evidence

SPARK_DRIVER_ID = "driver"  # Spark lists the driver among the executors under this id; it runs no source tasks
# The longest application id believed (Spark's are ~25 characters: app-20261124183100-0001, local-1764000000000).
APPLICATION_ID_MAX = 200


def is_application_id(value: str) -> bool:
    """Whether a label or stored value can name an application: 1..APPLICATION_ID_MAX printable characters."""
    return 0 < len(value) <= APPLICATION_ID_MAX and value.isprintable()


@dataclass(frozen=True)
class ExecutorSeries:
    """One executor's samples since the last tick, oldest first, one per `Observation.step_s`."""

    executor_id: str
    throughput_per_s: tuple[float, ...]
    utilization_ratio: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.throughput_per_s) != len(self.utilization_ratio):
            raise ValueError(
                f"executor {self.executor_id}: {len(self.throughput_per_s)} throughput samples but "
                f"{len(self.utilization_ratio)} utilization samples"
            )


@dataclass(frozen=True)
class PartitionLoad:
    """Mean records/s arriving at one source partition over the observation's window."""

    topic: str
    partition: int
    records_per_s: float


@dataclass(frozen=True)
class BatchWindow:
    """The query's micro-batches completed within the observation's window, from its progress events
    (`numInputRows`, `durationMs`): how many, the records they read and the seconds they took, summed.

    Counts are real numbers because a monitor derives them from rates over the window.
    """

    batches: float
    input_records: float
    duration_s: float

    @property
    def usable(self) -> bool:
        """Enough to learn from: at least one batch with records and a positive duration, all finite."""
        values = (self.batches, self.input_records, self.duration_s)
        return all(math.isfinite(v) for v in values) and self.batches >= 1 and self.input_records > 0 < self.duration_s

    @property
    def records_per_batch(self) -> float:
        return self.input_records / self.batches if self.batches > 0 else 0.0

    @property
    def seconds_per_batch(self) -> float:
        return self.duration_s / self.batches if self.batches > 0 else 0.0


@dataclass(frozen=True)
class Observation:
    """Everything the monitor saw since the previous tick.

    `workload_per_s` holds the source's arrival rate (records/s), oldest first, one sample per `step_s`, ending at
    `time_s`. Executor series use the same step. `uptime_s` is the time since the job (re)started processing.
    `application_id` names the Spark application observed at `time_s` and `agent_target` is the executor count the
    agent is asking Spark for; both stay at their defaults (unknown) where the monitor cannot tell (the simulator).
    """

    time_s: float
    step_s: float
    workload_per_s: tuple[float, ...]
    executors: tuple[ExecutorSeries, ...]
    consumer_lag_records: float
    scaleout: int
    uptime_s: float
    partitions: tuple[PartitionLoad, ...] = ()  # empty when the monitor does not report them
    batches: BatchWindow | None = None  # None when the monitor does not report the query's progress
    application_id: str = ""  # '' = unknown
    agent_target: int | None = None  # None = unknown, or the agent has no target (it asks for what Spark started with)

    @property
    def executor_ids(self) -> tuple[str, ...]:
        return tuple(w.executor_id for w in self.executors)

    @property
    def mean_workload_per_s(self) -> float:
        """The window's mean arrival rate over its finite samples (0 without any)."""
        arrivals = [x for x in self.workload_per_s if math.isfinite(x)]
        return sum(arrivals) / len(arrivals) if arrivals else 0.0

    @classmethod
    def of(
        cls,
        *,
        time_s: float,
        workload_per_s: float | Sequence[float],
        executors: Mapping[str, tuple[Sequence[float], Sequence[float]]],
        step_s: float = 1.0,
        consumer_lag_records: float = 0.0,
        scaleout: int | None = None,
        uptime_s: float = 1e9,
        partitions: Mapping[tuple[str, int], float] | None = None,
        batches: BatchWindow | None = None,
        application_id: str = "",
        agent_target: int | None = None,
    ) -> Observation:
        """Built from plain numbers (tests, benchmarks): `executors` maps id -> (throughput, utilization) series;
        a single workload value is repeated over the executors' samples; the scale-out defaults to their count."""
        series = tuple(
            ExecutorSeries(e, tuple(float(v) for v in thr), tuple(float(u) for u in util))
            for e, (thr, util) in executors.items()
        )
        if isinstance(workload_per_s, (int, float)):
            samples = len(series[0].throughput_per_s) if series else 1
            workload = (float(workload_per_s),) * samples
        else:
            workload = tuple(float(v) for v in workload_per_s)
        return cls(
            time_s=time_s,
            step_s=step_s,
            workload_per_s=workload,
            executors=series,
            consumer_lag_records=consumer_lag_records,
            scaleout=len(series) if scaleout is None else scaleout,
            uptime_s=uptime_s,
            partitions=tuple(PartitionLoad(t, p, float(r)) for (t, p), r in (partitions or {}).items()),
            batches=batches,
            application_id=application_id,
            agent_target=agent_target,
        )


@dataclass(frozen=True)
class Forecast:
    """Predicted workload (records/s) at `start_s + k * step_s` for k = 0..len-1; never negative."""

    start_s: float
    step_s: float
    values_per_s: tuple[float, ...]
    model: str
    # Upper bound of the model's prediction interval per step (same length as values_per_s); empty when the model
    # gives none. The planner provisions for it where the model is unsure.
    upper_per_s: tuple[float, ...] = ()

    @property
    def horizon_s(self) -> float:
        return len(self.values_per_s) * self.step_s

    def upper_bound(self) -> Forecast:
        """The forecast to provision for: the interval's upper bound where there is one, else the point forecast."""
        if len(self.upper_per_s) != len(self.values_per_s):
            return self
        upper = tuple(max(u, v) for u, v in zip(self.upper_per_s, self.values_per_s, strict=True))
        return Forecast(self.start_s, self.step_s, upper, self.model, self.upper_per_s)

    def toward_upper(self, weight_ratio: float) -> Forecast:
        """The point forecast moved `weight_ratio` of the way to the interval's upper bound (0: point, 1: upper)."""
        upper = self.upper_bound().values_per_s
        moved = tuple(v + weight_ratio * (u - v) for v, u in zip(self.values_per_s, upper, strict=True))
        return Forecast(self.start_s, self.step_s, moved, self.model, self.upper_per_s)

    def max_within(self, seconds: float) -> float:
        """Highest predicted workload over the next `seconds` (at least the first step)."""
        if not self.values_per_s:
            return 0.0
        steps = max(1, math.ceil(seconds / self.step_s)) if math.isfinite(seconds) else len(self.values_per_s)
        return max(self.values_per_s[:steps])

    @property
    def seconds_per_step(self) -> int:
        """How many one-second values each step's value stands for when the forecast is expanded (at least 1)."""
        return max(1, round(self.step_s))

    def per_second(self) -> tuple[float, ...]:
        """The forecast expanded to one value per second (each step's value repeated)."""
        return tuple(v for v in self.values_per_s for _ in range(self.seconds_per_step))


@dataclass(frozen=True)
class ExecutorCapacity:
    """An executor's learned model: throughput = intercept + slope * utilization, and what it can reach under skew."""

    executor_id: str
    samples: int
    intercept_per_s: float
    slope_per_s: float
    own_capacity_per_s: float  # at the expected maximum utilization, as if it received all the load it wanted
    load_share_ratio: float  # its share of the job's throughput in the latest window
    capacity_per_s: float  # what it can reach before the most constrained executor saturates
    # "regression" (its own fit), "pooled" (all executors' slope), "ratio" (throughput / utilization), "peers" (its
    # unfitted estimate overruled by what its peers show), "joining" (in warm-up) or "peer_mean" (no usable data)
    method: str

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
    executors: tuple[ExecutorCapacity, ...]
    # With large back-to-back batches while a backlog is worked off (index n-1); empty: the same as sizing.
    catch_up_per_scaleout_per_s: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()  # what the capacity model held back or changed this tick, for people
    # The current scale-out's steady rate at one batch per trigger, where the batches' line is known: sizing is at
    # the latency objective, which a job a little behind its trigger keeps (analyze/batches.py); both are reported.
    current_at_trigger_per_s: float | None = None
    # What set `current_per_s`: batch_line, utilization, kept_up, backlog_floor, previous (the last table's figure,
    # kept for want of evidence) or bounded (a change held back: beyond the bound, or a rise while the job is behind);
    # empty where no model made the table.
    current_basis: str = ""

    def at(self, scaleout: int) -> float:
        """Sizing capacity: what `scaleout` executors sustain at steady state."""
        if scaleout == self.current_scaleout:
            return self.current_per_s
        return self.per_scaleout_per_s[scaleout - 1]

    def catch_up_at(self, scaleout: int) -> float:
        """Records/s `scaleout` executors work a backlog off at (recovery predictions); never below sizing."""
        if len(self.catch_up_per_scaleout_per_s) >= scaleout:
            return max(self.catch_up_per_scaleout_per_s[scaleout - 1], self.at(scaleout))
        return self.at(scaleout)

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
    # cost_aware planner only (plan/cost.py): a scale-in Algorithm 1 proposed, held or changed
    SCALE_IN_RECENTLY_OUTGROWN = "scale_in_recently_outgrown"
    SCALE_IN_UNDONE_WITHIN_COOLDOWN = "scale_in_undone_within_cooldown"
    SCALE_IN_NOT_WORTH_IT = "scale_in_not_worth_it"
    SCALE_IN_BEST_NET_SAVING = "scale_in_best_net_saving"
    SCALE_IN_RESCALE_BUDGET = "scale_in_rescale_budget"
    # horizon planner only (plan/horizon.py): the first step of the cheapest schedule over the forecast
    PLAN_HOLDS = "horizon_plan_holds"
    PLAN_SCALES_OUT = "horizon_plan_scales_out"
    PLAN_SCALES_IN = "horizon_plan_scales_in"
    # batch_ratio planner only (plan/batchratio.py): Spark's DStreams batch-duration rule, a baseline
    BATCH_RATIO_HOLDS = "batch_ratio_holds"
    BATCH_RATIO_SCALES_OUT = "batch_ratio_scales_out"
    BATCH_RATIO_SCALES_IN = "batch_ratio_scales_in"
    COOLDOWN = "cooldown_after_rescale"
    SKIP_MISSING_DATA = "skip_missing_data"
    SKIP_WARMUP = "skip_warmup"
    # controller.max_scaleout 0 (the topic's partition count) before an observation has listed the partitions
    WAITING_FOR_PARTITION_COUNT = "waiting_for_partition_count"
    SCALE_IN_AFTER_GAP = "scale_in_after_monitoring_gap"
    # a scale-in proposed while the last rescale, a scale-out, is still recovering (controller.py)
    SCALE_IN_DURING_RECOVERY = "scale_in_during_recovery"


class Outcome(StrEnum):
    """What the actuator did with a rescale (the execute port reports it, the decision records it)."""

    ACCEPTED = "accepted"  # the actuator took the target; the loop confirms it on its next ticks (applied/unconfirmed)
    APPLIED = "applied"  # the job runs the target (seen on a later tick; the simulator's job at once)
    UNCONFIRMED = "unconfirmed"  # accepted, but not seen live in time, unreachable, or superseded (a later tick)
    REFUSED = "refused"  # the actuator said no (out of bounds, forbidden); nothing changed
    FAILED = "failed"  # could not reach the actuator or it erred; nothing known to have changed
    DRY_RUN = "dry_run"  # advisor mode: decided, not actuated
    NOT_RECORDED = "not_recorded"  # not sent: the tick could not record the decision first (knowledge store)

    @property
    def changed_the_job(self) -> bool:
        """Whether the job was disturbed, so the rescale counts (cool-down, recovery measurement)."""
        return self in (Outcome.ACCEPTED, Outcome.APPLIED, Outcome.UNCONFIRMED)


@dataclass(frozen=True)
class Actuation:
    """What the actuator did with a target: the one record of a rescale's outcome (the decision carries it)."""

    target: int
    outcome: Outcome
    detail: str = ""  # for people: what the actuator saw or why it refused
    live: int | None = None  # live executors when the actuator last looked
    duration_s: float = 0.0


@dataclass(frozen=True)
class Decision:
    """The planner's answer: an absolute target scale-out, why, and the numbers that decided it."""

    time_s: float
    current_scaleout: int
    target_scaleout: int
    reason: Reason
    evidence: Evidence = field(default_factory=Evidence, compare=False)
    notes: tuple[str, ...] = ()  # one line per scale-out examined and rejected, for people
    actuation: Actuation | None = None  # what the actuator did with a rescale, None if not asked

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
