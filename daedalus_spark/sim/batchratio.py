"""Simulation: the DStreams batch-duration rule (spark.streaming.dynamicAllocation.*) as a baseline policy.

Modelled from Spark's source: streaming/src/main/scala/org/apache/spark/streaming/scheduler/
ExecutorAllocationManager.scala (config keys in core/.../internal/config/Streaming.scala; the rule SPARK-24815 /
apache/spark#42352 proposed for Structured Streaming, not merged). Every scalingInterval (60 s) it takes the average
processing time of the batches completed in the interval (whole milliseconds, integer mean), ratio = average / batch
interval, and then:
- ratio >= scalingUpRatio (0.9): requests a total of max(minExecutors, min(maxExecutors, executors +
  max(round(ratio), 1))) (round half up, as Scala's math.round);
- ratio <= scalingDownRatio (0.3): kills one executor (a random one not running a receiver) if more than
  minExecutors remain;
- no completed batch in the interval: nothing. The sums restart every interval.
It requires scalingUpRatio > scalingDownRatio and minExecutors <= maxExecutors.

Where the simulator stands in: a batch's processing time is its duration in the micro-batch job (start to commit,
sim/microbatch.py batch_log); the batch interval is the trigger; the executors are the job's scale-out (those
requested, registered or not); the simulated job kills its highest slot rather than a random one. The continuous
job model (sim/job.py) has no batches: the policy refuses it (sim/policies.py checks before a run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.sim.job import SimulatedJob


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


@dataclass
class BatchRatioPolicy:
    """The rule every scaling interval, on the batches the micro-batch job completed in it."""

    settings: BatchRatioSettings
    name: str = "batch-ratio"
    sync_interval_s: int | None = None

    def __post_init__(self) -> None:
        self.sync_interval_s = self.settings.scaling_interval_s

    def decide(self, job: SimulatedJob) -> int | None:
        from daedalus_spark.sim.microbatch import MicroBatchJob

        if not isinstance(job, MicroBatchJob):
            raise ValueError(f"policy {self.name!r} needs batches: use a micro-batch job model (engine: microbatch)")
        starts, ends, _ = job.batch_log()
        now = float(job.now_s)
        done = (ends > now - self.settings.scaling_interval_s) & (ends <= now)
        ratio = average_ratio(ends[done] - starts[done], job.trigger_s)
        target = batch_ratio_target(current=job.scaleout, ratio=ratio, s=self.settings)
        return target if target != job.scaleout else None
