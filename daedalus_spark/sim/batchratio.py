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
job model (sim/job.py) has no batches: the policy refuses it (sim/policies.py checks before a run). The rule itself
lives in plan/batchratio.py, shared with the live loop's `batch_ratio` planner.
"""

from __future__ import annotations

from dataclasses import dataclass

from daedalus_spark.plan.batchratio import BatchRatioSettings, average_ratio, batch_ratio_target
from daedalus_spark.sim.job import SimulatedJob


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
