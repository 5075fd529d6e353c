"""Simulation: one micro-batch's tasks in waves over the executors' cores, and the capacities that follow.

A batch of R records has one task per source partition with data; partition p's task reads R x w_p records (the
partitions' backlogs stay in proportion to their arrival weights w, so a batch cap is shared the same way, as Kafka's
maxOffsetsPerTrigger is) and takes

    task_overhead_s + R x w_p / (core_rate x capacity ratio of its executor)

on the core it runs on. Placement follows analyze/partitions.py:
- `kafka`: each task prefers the executor at floorMod(TopicPartition.hashCode(), n) in the sorted list of the n
  executors registered when the batch is planned, and runs there (longest first over that executor's cores);
- `any_core`: longest task first to the core that is free first (ties: the lowest core).
A core may start late (`avail`, e.g. a joining executor's state-reload stall). The makespan is the last core's
finish; batch duration = batch_overhead_s + makespan.

Capacities per scale-out n (executors 0..n-1, all registered, none stalled), for the oracle, the optimum and checks:
- steady (as the controller's analyze/batches.py BatchFit.steady_per_s): the highest constant rate a whose
  back-to-back batches last at most L = max(T, 2 E), E = O + makespan(0) the empty batch's duration: a batch of
  a x L records finishes within L, O + makespan(a L) <= L (capped at max_offsets_per_trigger / L). L is the
  trigger while the fixed cost is at most half of it; beyond, batches always run back to back and half of each
  one is left for records. With `kafka` and one core per executor the makespan is max_e (k_e o + R S_e / r_e)
  (k_e tasks, load share S_e, core rate r_e), so a = min_e (L - O - k_e o) r_e / (S_e L); otherwise found by
  bisection.
- catch-up: the rate of back-to-back batches while a backlog is worked off: R / (O + makespan(R)) for R -> infinity,
  1 / makespan(1 record, no task overhead) (with a cap: cap / max(O + makespan(cap), T)).
Both are linear in the core rate, which is how the rate is derived from a trace's peak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from daedalus_spark.analyze.partitions import PartitionAssignment, topic_partition_hash


@dataclass(frozen=True)
class Layout:
    """The tasks of a batch over one set of registered executors (cores in executor order)."""

    core_slot: np.ndarray  # executor slot of each core
    core_speed: np.ndarray  # records/s of each core (core rate x its executor's capacity ratio)
    task_weight: np.ndarray  # share of the batch's records of each task, longest first (partitions with data)
    task_partition: np.ndarray  # partition index of each task
    task_cores: tuple[tuple[int, ...], ...] | None  # kafka: the cores each task may run on; None: any core
    task_overhead_s: float
    # kafka with one core per executor: tasks per core and share of the records per core (makespan in closed form)
    linear_count: np.ndarray | None
    linear_share: np.ndarray | None

    @property
    def cores(self) -> int:
        return len(self.core_slot)

    def finish(self, records: float, avail: list[float] | None = None) -> tuple[list[float], list[float]]:
        """Per core: when its last task ends (seconds after the batch's task phase starts) and the records it reads.
        A core without tasks ends at its `avail` (0 by default)."""
        o = self.task_overhead_s
        if self.linear_count is not None and self.linear_share is not None:
            fin, recs = [], []
            for j in range(self.cores):
                start = avail[j] if avail else 0.0
                k, share = float(self.linear_count[j]), float(self.linear_share[j])
                fin.append(start + (k * o + records * share / float(self.core_speed[j]) if k else 0.0))
                recs.append(records * share)
            return fin, recs
        free = list(avail) if avail else [0.0] * self.cores
        recs = [0.0] * self.cores
        speed = self.core_speed.tolist()
        allowed = self.task_cores
        everywhere = range(self.cores)
        for p, w in enumerate(self.task_weight.tolist()):
            pool = allowed[p] if allowed is not None else everywhere
            j = min(pool, key=free.__getitem__)  # first free, ties: the lowest core
            r = records * w
            free[j] += o + r / speed[j]
            recs[j] += r
        return free, recs

    def tasks(self, records: float, avail: list[float] | None = None) -> list[tuple[int, float, float, float, int]]:
        """Every task as (core, start, end, records, partition), in the order `finish` places them."""
        o = self.task_overhead_s
        free = list(avail) if avail else [0.0] * self.cores
        speed = self.core_speed.tolist()
        out = []
        for p, w in enumerate(self.task_weight.tolist()):
            pool = self.task_cores[p] if self.task_cores is not None else range(self.cores)
            j = min(pool, key=free.__getitem__)
            r = records * w
            start = free[j]
            free[j] = start + o + r / speed[j]
            out.append((j, start, free[j], r, int(self.task_partition[p])))
        return out

    def finish_many(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`finish` for many batches at once (no core starts late): arrays (batches, cores)."""
        records = np.asarray(records, dtype=float)
        o = self.task_overhead_s
        if self.linear_count is not None and self.linear_share is not None:
            recs = records[:, None] * self.linear_share[None, :]
            fin = np.where(self.linear_count[None, :] > 0, self.linear_count[None, :] * o + recs / self.core_speed, 0.0)
            return fin, recs
        k = len(records)
        free = np.zeros((k, self.cores))
        recs = np.zeros((k, self.cores))
        rows = np.arange(k)
        for p, w in enumerate(self.task_weight.tolist()):
            if self.task_cores is None:
                j = np.argmin(free, axis=1)
            else:
                pool = np.asarray(self.task_cores[p])
                j = pool[np.argmin(free[:, pool], axis=1)]
            r = records * w
            free[rows, j] += o + r / self.core_speed[j]
            recs[rows, j] += r
        return free, recs

    def makespan(self, records: float) -> float:
        return max(self.finish(records)[0], default=0.0)


def build_layout(
    *,
    slots: tuple[int, ...],
    weights: np.ndarray,
    rule: PartitionAssignment,
    topic: str,
    cores_per_executor: int,
    core_rate_per_s: float,
    capacity_ratios: np.ndarray,
    task_overhead_s: float,
) -> Layout:
    """The layout of a batch over the registered executors `slots` (in Spark's sorted order)."""
    if not slots:
        raise ValueError("a batch needs at least one registered executor")
    c = cores_per_executor
    core_slot = np.repeat(np.asarray(slots, dtype=np.int64), c)
    core_speed = core_rate_per_s * np.asarray(capacity_ratios, dtype=float)[core_slot]
    with_data = np.flatnonzero(np.asarray(weights) > 0)
    order = with_data[np.argsort(-np.asarray(weights)[with_data], kind="stable")]  # longest first, ties by partition
    task_weight = np.asarray(weights, dtype=float)[order]
    if rule == "any_core":
        return Layout(core_slot, core_speed, task_weight, order, None, task_overhead_s, None, None)
    n = len(slots)
    position = np.array([topic_partition_hash(topic, int(p)) % n for p in order], dtype=np.int64)
    task_cores = tuple(tuple(range(int(pos) * c, int(pos) * c + c)) for pos in position)
    linear_count = linear_share = None
    if c == 1:
        linear_count = np.bincount(position, minlength=n).astype(float)
        linear_share = np.bincount(position, weights=task_weight, minlength=n)
    return Layout(core_slot, core_speed, task_weight, order, task_cores, task_overhead_s, linear_count, linear_share)


def batch_bound_s(layout: Layout, *, trigger_s: float, batch_overhead_s: float) -> float:
    """The longest batch the steady state allows: the trigger, or twice the empty batch's duration (batch overhead +
    one wave of task overheads per core) where that exceeds it (analyze/batches.py BatchFit.batch_bound_s)."""
    return max(trigger_s, 2.0 * (batch_overhead_s + layout.makespan(0.0)))


def steady_records(layout: Layout, *, bound_s: float, batch_overhead_s: float) -> float:
    """The largest batch (records) that finishes within bound_s: batch_overhead_s + makespan(R) <= bound_s."""
    budget = bound_s - batch_overhead_s
    if budget <= 0 or not len(layout.task_weight):
        return 0.0
    if layout.linear_count is not None and layout.linear_share is not None:
        used = layout.linear_count > 0
        room = budget - layout.linear_count[used] * layout.task_overhead_s
        if (room <= 0).any():
            return 0.0
        return float(np.min(room * layout.core_speed[used] / layout.linear_share[used]))
    if layout.makespan(0.0) > budget:
        return 0.0
    hi = budget * float(layout.core_speed.sum()) / float(layout.task_weight.sum())  # every core busy, no overhead
    lo = 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if layout.makespan(mid) <= budget:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * max(hi, 1.0):
            break
    return lo


def catchup_rate(layout: Layout, *, trigger_s: float, batch_overhead_s: float, cap: float | None) -> float:
    """Records/s of back-to-back batches while a backlog is worked off: with a cap, cap / max(duration(cap),
    trigger); without one, the limit of large batches, 1 / makespan per record without task overheads."""
    if not len(layout.task_weight):
        return 0.0
    if cap is not None:
        return cap / max(batch_overhead_s + layout.makespan(cap), trigger_s)
    bare = Layout(
        layout.core_slot,
        layout.core_speed,
        layout.task_weight,
        layout.task_partition,
        layout.task_cores,
        0.0,
        layout.linear_count,
        layout.linear_share,
    )
    per_record = bare.makespan(1.0)
    return 1.0 / per_record if per_record > 0 else 0.0


class WaveModel:
    """A job's batches: the layouts of every set of registered executors (cached) and its per-batch costs."""

    def __init__(
        self,
        *,
        weights: np.ndarray,
        rule: PartitionAssignment,
        topic: str,
        cores_per_executor: int,
        core_rate_per_s: float,
        capacity_ratios: np.ndarray,
        task_overhead_s: float,
        batch_overhead_s: float,
        trigger_s: float,
        cap_records: float | None,
    ) -> None:
        self.weights, self.rule, self.topic = np.asarray(weights, dtype=float), rule, topic
        self.cores_per_executor, self.core_rate_per_s = cores_per_executor, core_rate_per_s
        self.capacity_ratios = np.asarray(capacity_ratios, dtype=float)
        self.task_overhead_s, self.batch_overhead_s = task_overhead_s, batch_overhead_s
        self.trigger_s, self.cap_records = trigger_s, cap_records
        self._layouts: dict[object, Layout] = {}

    def layout(self, slots: tuple[int, ...], warming: tuple[int, ...] = (), warm_ratio: float = 1.0) -> Layout:
        """The layout over `slots`, the executors in `warming` at `warm_ratio` of their speed."""
        key = (slots, warming, warm_ratio) if warming else slots
        found = self._layouts.get(key)
        if found is None:
            ratios = self.capacity_ratios
            if warming:
                ratios = ratios.copy()
                ratios[list(warming)] *= warm_ratio
            found = self._layouts[key] = build_layout(
                slots=slots,
                weights=self.weights,
                rule=self.rule,
                topic=self.topic,
                cores_per_executor=self.cores_per_executor,
                core_rate_per_s=self.core_rate_per_s,
                capacity_ratios=ratios,
                task_overhead_s=self.task_overhead_s,
            )
        return found

    def duration_s(self, records: float, scaleout: int) -> float:
        """A batch's duration on executors 0..scaleout-1: batch overhead + makespan."""
        return self.batch_overhead_s + self.layout(tuple(range(scaleout))).makespan(records)

    def batch_bound_s(self, scaleout: int) -> float:
        """L at executors 0..scaleout-1: max(trigger, 2 x the empty batch's duration)."""
        return batch_bound_s(
            self.layout(tuple(range(scaleout))), trigger_s=self.trigger_s, batch_overhead_s=self.batch_overhead_s
        )

    def steady_capacity_per_s(self, scaleout: int) -> float:
        """The highest constant rate whose back-to-back batches last at most L (batch_bound_s)."""
        bound = self.batch_bound_s(scaleout)
        records = steady_records(
            self.layout(tuple(range(scaleout))), bound_s=bound, batch_overhead_s=self.batch_overhead_s
        )
        if self.cap_records is not None:
            records = min(records, self.cap_records)
        return records / bound

    def catchup_capacity_per_s(self, scaleout: int) -> float:
        return catchup_rate(
            self.layout(tuple(range(scaleout))),
            trigger_s=self.trigger_s,
            batch_overhead_s=self.batch_overhead_s,
            cap=self.cap_records,
        )
