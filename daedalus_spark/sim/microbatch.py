"""Simulation: a Spark Structured Streaming job that runs micro-batches (JobModel.engine: microbatch).

Rescales (JobModel.rescale):
- `in_place` scale-out: the new executors are idle until they register (`in_place.registration`, one draw per
  rescale); the first batch that starts after that gives them tasks, but they first spend `in_place.stall` loading
  the state that moves to them: CPU busy, no records, their tasks start after the stall (any_core: other cores take
  tasks meanwhile), and the batch does not commit before the stall ends (its stateful stage waits for the moved
  state) - which is what stalls the whole job for the stall's length, as measured here (docs/demo.md). Running
  executors never stop. Executors join at batch boundaries.
- `in_place` scale-in: the highest slots are killed at once and take no new tasks; their tasks of the running batch
  that had not finished are retried after `in_place.leave` (when the driver has declared the executor lost), longest
  first to the first free surviving core; the work they had done is lost (it stays in the per-second series: the CPU
  was spent). The observed scale-out drops at the request.
- `restart` (a driver restart): the running batch is abandoned (its records return to the lag: the replay from
  the checkpoint is the uncommitted batch), nothing runs for a downtime drawn as the continuous engine's, then the
  query resumes at once with the new scale-out.

Observations look like the monitor's: only registered executors are listed (an executor that registered inside
the window shortens the window to its samples, as the monitor's common grid does), ids are new for every joining
executor, `uptime_s` is the application's (in-place rescales do not restart it), and `batches` holds the batches
that completed in the window.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.domain import BatchWindow, Observation
from daedalus_spark.sim.job import Rescale
from daedalus_spark.sim.microbatch_engine import BatchEngine


@dataclass(frozen=True)
class TaskPhase:
    """One batch's tasks as the scheduler saw them (absolute seconds): submitted together after the batch's fixed
    cost, each started on an executor slot when a core was free (a joining executor's first task at once: its state
    reload runs inside it); for dynamic allocation's pending/running counts."""

    submit_s: float
    start_s: np.ndarray
    end_s: np.ndarray
    slot: np.ndarray


class MicroBatchJob(BatchEngine):
    """The micro-batch engine behind SimulatedJob's interface (the policies and the runner see no difference)."""

    # ---- rescales ----------------------------------------------------------------------------------------------

    def request_scaleout(self, target: int) -> bool:
        if not self.in_place:
            return self._restart(target)
        target = max(1, min(int(target), self.capacity.max_scaleout))
        if target == self.scaleout or self.now_s >= self.duration_s:
            return False
        now = float(self.now_s)
        spec = self.model.in_place
        if target > self.scaleout:
            registration = float(self._rng.uniform(spec.registration.low_s, spec.registration.high_s))
            stall = float(self._rng.uniform(spec.stall.low_s, spec.stall.high_s))
            for slot in range(self.scaleout, target):
                self._ready[slot], self._stall[slot] = now + registration, stall
                self._joined[slot] = self.warmup_s > 0
                self._ids[slot], self._next_id = self._next_id, self._next_id + 1
            self.rescales.append(
                Rescale(
                    self.now_s,
                    self.scaleout,
                    target,
                    0,
                    0.0,
                    kind="in_place",
                    registration_s=registration,
                    stall_s=stall,
                )
            )
        else:
            leave = float(self._rng.uniform(spec.leave.low_s, spec.leave.high_s))
            retried = self._retry(now, range(target, self.scaleout), leave)
            self._ready[target : self.scaleout], self._stall[target : self.scaleout] = math.inf, 0.0
            self.rescales.append(
                Rescale(
                    self.now_s, self.scaleout, target, 0, 0.0, kind="in_place", leave_s=leave, retried_records=retried
                )
            )
        self.scaleout, self.restart_end_s = target, self.now_s
        return True

    def _retry(self, now: float, killed: range, leave: float) -> float:
        """The running batch's unfinished tasks on killed executors, rerun after the leave delay on the others;
        returns the records retried."""
        b = self._last
        if b is None or b.end <= now or not any(s in killed for s in b.slots):
            return 0.0
        layout = self.waves.layout(b.slots, b.warming, self.warm_ratio)
        u0 = b.start + self.overhead_s
        x = now - u0  # the kill, in the batch's task-phase time
        slot_of = layout.core_slot.tolist()
        dead = [slot_of[j] in killed for j in range(layout.cores)]
        moved = [t for t in layout.tasks(b.records, b.avail) if dead[t[0]] and t[2] > x]
        if not moved or all(dead):  # all(dead) cannot happen: slot 0 is never killed and always registered
            return 0.0
        # the killed cores' intervals from the kill on are undone
        for j in range(layout.cores):
            if not dead[j]:
                continue
            a = b.avail[j] if b.avail else 0.0
            if a > x:
                self._intervals.append((max(u0, now), u0 + a, slot_of[j], 0.0, -1.0 / self.cores))
            fin = b.finish[j]
            if fin > max(a, x):
                rate = b.recs[j] / (fin - a)
                self._intervals.append((max(u0 + a, now), u0 + fin, slot_of[j], -rate, -1.0 / self.cores))
        free = {j: max(b.finish[j], x + leave) for j in range(layout.cores) if not dead[j]}
        speed = layout.core_speed.tolist()
        o = layout.task_overhead_s
        for _, _, _, records, _ in sorted(moved, key=lambda t: -t[3]):
            j = min(free, key=lambda c: (free[c], c))
            begin = free[j]
            free[j] = begin + o + records / speed[j]
            self._intervals.append(
                (u0 + begin, u0 + free[j], slot_of[j], records / (free[j] - begin), 1.0 / self.cores)
            )
        end = u0 + max(free.values())
        self._count_batch(b.end, b.end - b.start, b.records, -1.0)
        self._count_batch(end, end - b.start, b.records, +1.0)
        self._ends[b.index] = end
        b.end = end
        self._next_start = max(end, self._next_tick(b.start))
        return float(sum(t[3] for t in moved))

    def _restart(self, target: int) -> bool:
        """A driver restart: the running batch is abandoned and replayed, nothing runs for the downtime."""
        target = max(1, min(int(target), self.capacity.max_scaleout))
        if target == self.scaleout or not self.processing or self.now_s >= self.duration_s:
            return False
        now = float(self.now_s)
        spec = self.model.downtime_scale_out if target > self.scaleout else self.model.downtime_scale_in
        downtime = round(self._rng.uniform(spec.low_s, spec.high_s))
        replay = 0.0
        b = self._last
        if b is not None and b.end > now:
            replay = b.records
            layout = self.waves.layout(b.slots, b.warming, self.warm_ratio)
            u0 = b.start + self.overhead_s
            slot_of = layout.core_slot.tolist()
            for j in range(layout.cores):
                a = b.avail[j] if b.avail else 0.0
                if u0 + a > now:
                    self._intervals.append((max(u0, now), u0 + a, slot_of[j], 0.0, -1.0 / self.cores))
                if b.finish[j] > a and u0 + b.finish[j] > now:
                    rate = b.recs[j] / (b.finish[j] - a)
                    self._intervals.append((max(u0 + a, now), u0 + b.finish[j], slot_of[j], -rate, -1.0 / self.cores))
            self._count_batch(b.end, b.end - b.start, b.records, -1.0)
            self._starts.pop()
            self._ends.pop()
            self._offs.pop()
            self._slots.pop()
            self._avail.pop()
            self._warming.pop()
            self._taken -= b.records
            self._last = None
        self.rescales.append(Rescale(self.now_s, self.scaleout, target, downtime, replay))
        self.scaleout, self.restart_end_s = target, self.now_s + downtime
        self._ready[:target], self._ready[target:] = now + downtime, math.inf
        self._stall[:] = 0.0
        self._joined[:], self._warm_until[:] = False, -math.inf
        self._next_start = now + downtime
        self._vector_ok = True
        return True

    # ---- what the monitor and dynamic allocation see ------------------------------------------------------------

    def task_phases(self, t0: float, t1: float) -> list[TaskPhase]:
        """The task phases of the batches that run in [t0, t1), in order (a scale-in's retried tasks not shown)."""
        out: list[TaskPhase] = []
        i = bisect.bisect_left(self._starts, t1) - 1
        while i >= 0 and self._ends[i] > t0:
            records = self._offs[i] - (self._offs[i - 1] if i else 0.0)
            layout = self.waves.layout(self._slots[i], self._warming[i], self.warm_ratio)
            tasks = layout.tasks(records, self._avail[i])
            u0 = self._starts[i] + self.overhead_s
            # a joining executor's state reload runs inside its first task: that task runs from the phase's start
            stalled = {j for j, a in enumerate(self._avail[i] or []) if a > 0}
            begins = []
            for core, begin, *_ in tasks:
                begins.append(u0 + (0.0 if core in stalled else begin))
                stalled.discard(core)
            start = np.asarray(begins)
            end = np.asarray([u0 + t[2] for t in tasks])
            slot = layout.core_slot[np.asarray([t[0] for t in tasks], dtype=np.int64)]
            out.append(TaskPhase(u0, start, end, slot))
            i -= 1
        return out[::-1]

    def registered_s(self) -> np.ndarray:
        """When each current executor slot registered (inf: not yet)."""
        return self._ready[: self.scaleout].copy()

    def observation(self, since_s: int) -> Observation:
        t1 = self.now_s
        t0 = max(0, since_s)
        reporting = self.reporting_since_s()
        if math.isfinite(reporting):
            t0 = max(t0, math.floor(reporting))
        if self.in_place:
            listed = [i for i in range(self.scaleout) if self._ready[i] <= t1 - 1]
            joined = [math.ceil(self._ready[i]) for i in listed if math.isfinite(self._ready[i])]
            t0 = max([t0, *joined])
            uptime = float(t1)
        else:
            listed = list(range(self.scaleout))
            uptime = self.uptime_s()
        t0 = min(t0, t1 - 1) if t1 > 0 else 0
        batches = BatchWindow(
            batches=float(self.batch_count[t0:t1].sum()),
            input_records=float(self.batch_records[t0:t1].sum()),
            duration_s=float(self.batch_seconds[t0:t1].sum()),
        )
        return self._observation(t0, t1, listed, uptime_s=uptime, batches=batches)

    def _executor_number(self, slot: int) -> int:
        return self._ids[slot]
