"""Plan (baseline): the DStreams batch-duration rule (spark.streaming.dynamicAllocation.*) as a planner of the loop.

The rule, from Spark's streaming/src/main/scala/org/apache/spark/streaming/scheduler/ExecutorAllocationManager.scala
(keys in core/.../internal/config/Streaming.scala; proposed for Structured Streaming in SPARK-24815 /
apache/spark#42352, not merged): every scalingInterval, ratio = average processing time of the batches completed in
the interval (whole milliseconds, integer mean) / the batch interval; at or above scalingUpRatio (0.9) request
max(round(ratio), 1) more executors, at or below scalingDownRatio (0.3) remove one; no completed batch: nothing;
bounded by min/max executors. The simulator's `batch-ratio` policy (sim/batchratio.py) and the live loop's
`controller.planner: batch_ratio` share this rule. In the loop, a tick is a scaling round: the scaling interval is
`loop_interval_s`, the batches are those the observation's window completed, the batch interval is
`capacity.trigger_interval_s`, and the bounds are `min_scaleout` / `max_scaleout`. Like Spark, it keeps no cool-down
and no rescale budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from daedalus_spark.config import ControllerConfig
from daedalus_spark.domain import Decision, Reason
from daedalus_spark.evidence import BatchRatioEvidence, Evidence
from daedalus_spark.plan.algorithm import candidate, target_evidence, tick_evidence
from daedalus_spark.plan.port import PlanInputs, Planner, TickContext


@dataclass(frozen=True)
class BatchRatioSettings:
    """spark.streaming.dynamicAllocation.* (Spark's defaults; min/max executors default to the controller's)."""

    min_executors: int = 1  # minExecutors (Spark: max(1, receivers))
    max_executors: int = 12  # maxExecutors (Spark: Int.MaxValue)
    scaling_interval_s: int = 60  # scalingInterval
    scaling_up_ratio: float = 0.9  # scalingUpRatio
    scaling_down_ratio: float = 0.3  # scalingDownRatio


def batch_ratio_target(*, current: int, ratio: float | None, s: BatchRatioSettings) -> int:
    """The executors after one scaling round (`ratio` None: no batch completed in the interval)."""
    if ratio is None:
        return current
    if ratio >= s.scaling_up_ratio:
        added = max(math.floor(ratio + 0.5), 1)
        return max(min(s.max_executors, current + added), s.min_executors)
    if ratio <= s.scaling_down_ratio and current > s.min_executors:
        return current - 1
    return current


def average_ratio(durations_s: np.ndarray, trigger_s: float) -> float | None:
    """Mean processing time (integer milliseconds, as Spark sums and divides Longs) over the batch interval."""
    if not len(durations_s):
        return None
    ms = np.rint(np.asarray(durations_s) * 1000.0).astype(np.int64)
    return float(int(ms.sum()) // len(ms)) / (trigger_s * 1000.0)


def window_ratio(batches: float, batch_seconds: float, trigger_s: float) -> float | None:
    """The rule's ratio from a window's totals (completed batches, their summed seconds): None without a batch."""
    if not (math.isfinite(batches) and math.isfinite(batch_seconds)) or batches < 1 or trigger_s <= 0:
        return None
    mean_ms = math.floor(round(batch_seconds * 1000.0) / round(batches))
    return mean_ms / (trigger_s * 1000.0)


@dataclass(frozen=True)
class BatchRatioInputs(PlanInputs):
    """The tick's inputs, and the query's micro-batches completed in the observation's window, their summed seconds
    and its trigger interval (0 batches: the monitor reported none)."""

    batches_completed: float = 0.0
    batch_seconds: float = 0.0
    trigger_interval_s: float = 0.0


def batch_ratio_inputs(inputs: PlanInputs, tick: TickContext) -> BatchRatioInputs:
    """The tick's inputs, and the batches its observation's window completed."""
    batches = tick.observation.batches
    return inputs.extended(
        BatchRatioInputs,
        batches_completed=batches.batches if batches is not None else 0.0,
        batch_seconds=batches.duration_s if batches is not None else 0.0,
        trigger_interval_s=tick.config.capacity.trigger_interval_s,
    )


def plan_batch_ratio(inputs: BatchRatioInputs, settings: ControllerConfig) -> Decision:
    """One scaling round of the batch-duration rule on the tick's batches; the evidence says what it saw."""
    current = inputs.current_scaleout
    rule = BatchRatioSettings(
        min_executors=settings.min_scaleout,
        max_executors=settings.max_scaleout,
        scaling_interval_s=round(settings.loop_interval_s),
    )
    ratio = window_ratio(inputs.batches_completed, inputs.batch_seconds, inputs.trigger_interval_s)
    target = batch_ratio_target(current=current, ratio=ratio, s=rule)
    batches = BatchRatioEvidence(
        batch_ratio=None if ratio is None else round(ratio, 4),
        batches_completed=round(inputs.batches_completed, 3),
        trigger_interval_s=inputs.trigger_interval_s,
    )
    evidence = Evidence(tick=tick_evidence(inputs), batches=batches)
    if target == current:
        return Decision(inputs.now_s, current, current, Reason.BATCH_RATIO_HOLDS, evidence)
    chosen = candidate(inputs, target, inputs.forecast.per_second())
    evidence = replace(evidence, target=target_evidence(chosen))
    reason = Reason.BATCH_RATIO_SCALES_OUT if target > current else Reason.BATCH_RATIO_SCALES_IN
    return Decision(inputs.now_s, current, target, reason, evidence)


PLANNER = Planner(plan_batch_ratio, batch_ratio_inputs)  # its registry entry (plan/registry.py)
