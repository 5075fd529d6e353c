"""Simulation: Spark core dynamic allocation (ExecutorAllocationManager) as a baseline policy on micro-batches.

Modelled from Spark's source and configuration docs (spark.apache.org/docs/latest/configuration.html, "Dynamic
Allocation"; job-scheduling.html "Dynamic Resource Allocation"):
- core/src/main/scala/org/apache/spark/ExecutorAllocationManager.scala: a poll every 100 ms. maxNeeded =
  ceil((pending + running tasks) x executorAllocationRatio / tasks per executor). A target above maxNeeded is
  lowered to max(maxNeeded, minExecutors) and the round size reset to 1; otherwise, once tasks have been pending for
  schedulerBacklogTimeout (1 s) after their stage was submitted, and then every sustainedSchedulerBacklogTimeout
  (1 s) while some stay pending, a round adds: target = min(max(target, registered) + toAdd, maxNeeded), within
  [minExecutors, maxExecutors]; toAdd doubles when the round added exactly toAdd, else it is 1 again. A drained
  queue (every task started) clears the timer and resets toAdd to 1.
- core/src/main/scala/org/apache/spark/scheduler/dynalloc/ExecutorMonitor.scala: an executor is idle from its
  registration or its last task's end; it times out after executorIdleTimeout (60 s), or, with
  shuffleTracking.enabled and shuffle data on it, after shuffleTracking.timeout (default: infinite) instead.
  Removals never go below max(minExecutors, target).

Where the simulator stands in (the choices are ours):
- Tasks: the micro-batch job's task phases (sim/microbatch.py TaskPhase: one Kafka task per partition with data,
  waves over the executors' cores). A task is pending from the phase's submission to its start, running to its end.
  The polls of each second run when the simulator reaches its end; the resulting allocation is applied then (at most
  1 s late); removals are checked once per second.
- A lowered target cancels nothing: Kubernetes' ExecutorPodsAllocator (resource-managers/kubernetes/core/src/main/
  scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsAllocator.scala) deletes surplus pending pods only once they
  have waited executorIdleTimeout, longer than our registration times, and running executors leave only through
  the idle timeout. Requests therefore follow the highest target of the second.
- Shuffle data: the Kafka stage of a stateful query writes the shuffle its state stage reads, so an executor that
  ran a task holds shuffle data. Spark drops it when the driver's ContextCleaner cleans an old batch's shuffle
  (after a driver GC, spark.cleaner.periodicGC.interval 30 min); not modelled, so shuffle tracking holds it until
  shuffleTracking.timeout.
- The idle executors are removed, as counted; the simulated job kills the highest slots (its Kafka placement then
  moves the partitions as Spark's would).
- The continuous job model (sim/job.py) has no tasks: the policy refuses it (sim/policies.py checks before a run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from daedalus_spark.sim.job import SimulatedJob

if TYPE_CHECKING:
    from daedalus_spark.sim.microbatch import TaskPhase

POLL_S = 0.1  # ExecutorAllocationManager's intervalMillis


@dataclass(frozen=True)
class DynamicAllocationSettings:
    """spark.dynamicAllocation.* (Spark's defaults; min/max executors default to the controller's bounds)."""

    min_executors: int = 1  # minExecutors (Spark: 0; a simulated job keeps one)
    max_executors: int = 12  # maxExecutors (Spark: infinity)
    scheduler_backlog_timeout_s: float = 1.0  # schedulerBacklogTimeout
    sustained_backlog_timeout_s: float = 1.0  # sustainedSchedulerBacklogTimeout
    executor_idle_timeout_s: float = 60.0  # executorIdleTimeout
    allocation_ratio: float = 1.0  # executorAllocationRatio
    shuffle_tracking: bool = True  # shuffleTracking.enabled (needed without an external shuffle service)
    shuffle_tracking_timeout_s: float = math.inf  # shuffleTracking.timeout


@dataclass
class Allocation:
    """ExecutorAllocationManager's target and its ramp (numExecutorsTarget, numExecutorsToAdd, addTime)."""

    s: DynamicAllocationSettings
    target: int
    tasks_per_executor: int = 1
    to_add: int = 1
    add_at_s: float | None = None
    _backlog_submit_s: float | None = None

    def max_needed(self, pending: int, running: int) -> int:
        return math.ceil((pending + running) * self.s.allocation_ratio / self.tasks_per_executor - 1e-9)

    def poll(self, now_s: float, *, pending: int, running: int, registered: int, submit_s: float | None) -> int:
        """One poll: the queue's timer (`submit_s`: when the stage with pending tasks was submitted), then the
        target (updateAndSyncNumExecutorsTarget). Returns the target."""
        if pending == 0:
            self.add_at_s, self._backlog_submit_s, self.to_add = None, None, 1
        elif submit_s != self._backlog_submit_s:  # a new backlog: its stage's submission starts the timer
            since = now_s if submit_s is None else submit_s
            self.add_at_s, self._backlog_submit_s = since + self.s.scheduler_backlog_timeout_s, submit_s
            self.to_add = 1
        needed = self.max_needed(pending, running)
        if needed < self.target:
            self.target, self.to_add = max(needed, self.s.min_executors), 1
        elif self.add_at_s is not None and now_s >= self.add_at_s - 1e-9:
            self._add(needed, registered)
            self.add_at_s = now_s + self.s.sustained_backlog_timeout_s
        return self.target

    def _add(self, needed: int, registered: int) -> None:
        if self.target >= self.s.max_executors:
            self.to_add = 1
            return
        old = self.target
        new = min(max(self.target, registered) + self.to_add, needed)
        self.target = max(min(new, self.s.max_executors), self.s.min_executors)
        delta = self.target - old
        self.to_add = self.to_add * 2 if delta and delta == self.to_add else 1


def removable(
    *, idle_since_s: np.ndarray, holds_shuffle: np.ndarray, now_s: float, floor: int, s: DynamicAllocationSettings
) -> int:
    """How many of the executors (idle since, NaN: busy now) have timed out, keeping at least `floor`."""
    timeout = np.where(s.shuffle_tracking & holds_shuffle, s.shuffle_tracking_timeout_s, s.executor_idle_timeout_s)
    with np.errstate(invalid="ignore"):
        timed_out = int(np.sum(now_s - idle_since_s >= timeout - 1e-9))
    return max(0, min(timed_out, len(idle_since_s) - floor))


@dataclass
class SparkDaPolicy:
    """Spark's dynamic allocation, polled as Spark does, applied once per simulated second."""

    settings: DynamicAllocationSettings
    name: str = "spark-da"
    sync_interval_s: int | None = 1
    _alloc: Allocation | None = field(default=None, repr=False)
    _last_task_end_s: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)  # per slot; -inf: never
    _busy_until_s: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def decide(self, job: SimulatedJob) -> int | None:
        from daedalus_spark.sim.microbatch import MicroBatchJob

        if not isinstance(job, MicroBatchJob):
            raise ValueError(f"policy {self.name!r} needs tasks: use a micro-batch job model (engine: microbatch)")
        if self._alloc is None:
            self._alloc = Allocation(self.settings, job.scaleout, tasks_per_executor=job.cores)
            self._last_task_end_s = np.full(job.capacity.max_scaleout, -math.inf)
            self._busy_until_s = np.full(job.capacity.max_scaleout, -math.inf)
        now = float(job.now_s)
        self._last_task_end_s[job.scaleout :] = -math.inf  # slots killed since: a new executor will be new
        self._busy_until_s[job.scaleout :] = -math.inf
        registered = np.maximum(job.registered_s(), 0.0)  # the initial executors registered at the start
        phases = job.task_phases(now - 1.0, now)
        highest = job.scaleout
        for k in range(1, round(1.0 / POLL_S) + 1):
            t = now - 1.0 + k * POLL_S
            pending, running, submit = _queue(phases, t)
            n_registered = int(np.sum(registered <= t))
            highest = max(
                highest, self._alloc.poll(t, pending=pending, running=running, registered=n_registered, submit_s=submit)
            )
        for p in phases:  # tasks that ended by now: their executors' idle clocks start at their end
            done = p.end_s <= now
            np.maximum.at(self._last_task_end_s, p.slot[done], p.end_s[done])
            np.maximum.at(self._busy_until_s, p.slot[p.start_s <= now], p.end_s[p.start_s <= now])
        if highest > job.scaleout:
            return min(highest, self.settings.max_executors)
        n = job.scaleout
        running_now = self._busy_until_s[:n] > now
        idle_since = np.where(running_now, np.nan, np.maximum(self._last_task_end_s[:n], registered))
        idle_since = np.where(np.isfinite(registered), idle_since, np.nan)  # not registered yet: not idle
        holds = np.isfinite(self._last_task_end_s[:n])
        floor = max(self.settings.min_executors, self._alloc.target)
        k = removable(idle_since_s=idle_since, holds_shuffle=holds, now_s=now, floor=floor, s=self.settings)
        return n - k if k else None


def _queue(phases: list[TaskPhase], t: float) -> tuple[int, int, float | None]:
    """Pending and running tasks at t, and when the stage with pending tasks was submitted."""
    pending = running = 0
    submit: float | None = None
    for p in phases:
        if p.submit_s > t:
            continue
        waiting = int(np.sum(p.start_s > t))
        pending += waiting
        running += int(np.sum((p.start_s <= t) & (p.end_s > t)))
        if waiting:
            submit = p.submit_s
    return pending, running, submit
