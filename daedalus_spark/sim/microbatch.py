"""Simulation: a Spark Structured Streaming job that runs micro-batches (JobModel.engine: microbatch).

Batches, in continuous time (records arrive uniformly within each trace second):
- the query triggers at multiples of `trigger_s`; a batch takes what arrived since the last one, up to
  `max_offsets_per_trigger`; none runs when nothing arrived. The next batch starts at max(end of this one, the next
  trigger tick after its start), so under a backlog batches run back to back and grow;
- batch duration = batch_overhead_s + the makespan of its tasks (sim/waves.py: one task per partition with data,
  in waves over the registered executors' cores, `kafka` or `any_core` placement); the fixed cost comes first
  (driver planning), the records are committed (leave the lag) at the batch's end;
- an executor's records and busy time are spread over the time its cores run tasks; busy = that time / cores;
  CPU = idle + (1 - idle) x busy + noise, as the continuous engine;
- steady stretches (every batch starts on its tick, takes everything and ends within the trigger) are computed
  with numpy for many batches at once; everything else batch by batch.

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

from daedalus_spark.domain import BatchWindow, ExecutorSeries, Observation, PartitionLoad
from daedalus_spark.sim.job import Rescale, SimulatedJob
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.skew import SimulatedCapacity
from daedalus_spark.sim.waves import Layout, WaveModel

_EPS_RECORDS = 1e-6
_EPS_S = 1e-9
_FIRST_LOOKAHEAD = 16  # ticks tried at once in a steady stretch; doubled while stretches succeed


@dataclass
class _Batch:
    """The last batch started: what a scale-in or a restart changes while it runs."""

    index: int  # in the batch lists
    start: float
    end: float
    records: float
    slots: tuple[int, ...]
    avail: list[float] | None  # per core, seconds after the task phase starts before it takes tasks (stalls)
    finish: list[float]  # per core, when its last task ends (same origin)
    recs: list[float]  # per core, records


@dataclass(frozen=True)
class TaskPhase:
    """One batch's tasks as the scheduler saw them (absolute seconds): submitted together after the batch's fixed
    cost, each started on an executor slot when a core was free (a joining executor's first task at once: its state
    reload runs inside it); for dynamic allocation's pending/running counts."""

    submit_s: float
    start_s: np.ndarray
    end_s: np.ndarray
    slot: np.ndarray


class MicroBatchJob(SimulatedJob):
    """The micro-batch engine behind SimulatedJob's interface (the policies and the runner see no difference)."""

    def __init__(
        self,
        workload_per_s: np.ndarray,
        model: JobModel,
        capacity: SimulatedCapacity,
        *,
        initial_scaleout: int,
        cpu_signal: bool,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(
            workload_per_s, model, capacity, initial_scaleout=initial_scaleout, cpu_signal=cpu_signal, rng=rng
        )
        if capacity.waves is None:
            raise ValueError("the micro-batch engine needs a capacity built for it (engine: microbatch)")
        self.waves: WaveModel = capacity.waves
        mb = model.microbatch
        self.trigger_s, self.overhead_s = mb.trigger_s, mb.batch_overhead_s
        self.cap = float(mb.max_offsets_per_trigger) if mb.max_offsets_per_trigger is not None else None
        self.cores = mb.cores_per_executor
        self.in_place = model.rescale == "in_place"
        # A job that keeps up holds the next batch's input and, at times, the running batch's: each up to L seconds
        # of arrivals, L = max(trigger, 2 x the empty batch's duration) (the per-second allowance of RunResult
        # follows the scale-out: SimulatedCapacity.lag_allowance_s; this one is the initial scale-out's).
        self.lag_allowance_s = float(np.max(capacity.lag_allowance_s(np.asarray([initial_scaleout]))))
        n, slots = self.duration_s, capacity.max_scaleout
        self._w = self.workload_per_s
        self._arrived = np.concatenate(([0.0], np.cumsum(self._w)))  # records arrived by each whole second
        self._diff_thr = np.zeros((n + 2, slots))
        self._diff_busy = np.zeros((n + 2, slots))
        self._carry_thr = np.zeros(slots)
        self._carry_busy = np.zeros(slots)
        self._intervals: list[tuple[float, float, int, float, float]] = []  # (from, to, slot, records/s, busy)
        self._interval_arrays: list[tuple[np.ndarray, ...]] = []
        self.batch_count = np.zeros(n)
        self.batch_records = np.zeros(n)
        self.batch_seconds = np.zeros(n)
        self._starts: list[float] = []  # per batch, in order: start, end and offset committed at its end
        self._ends: list[float] = []
        self._offs: list[float] = []
        self._slots: list[tuple[int, ...]] = []  # per batch: the registered executors it ran on
        self._avail: list[list[float] | None] = []  # per batch: per core, its late start (stalls), or None
        self._lag_from = 0  # first batch that may end after the last flushed second
        self._committed_before = 0.0  # offset committed by then
        self._ready = np.full(slots, -math.inf)  # when each slot's executor registered (inf: not alive)
        self._ready[initial_scaleout:] = math.inf
        self._stall = np.zeros(slots)  # stall pending for the first batch the slot's executor takes
        self._ids = list(range(slots))
        self._next_id = initial_scaleout
        self._taken = 0.0  # offset up to which records went into batches
        self._next_start = 0.0  # earliest start of the next batch
        self._last: _Batch | None = None
        self._vector_ok = True
        self._lookahead = _FIRST_LOOKAHEAD

    # ---- time and arrivals -------------------------------------------------------------------------------------

    def _arrived_at(self, x: float) -> float:
        n = self.duration_s
        if x >= n:
            return float(self._arrived[n])
        if x <= 0:
            return 0.0
        k = int(x)
        return float(self._arrived[k] + self._w[k] * (x - k))

    def _arrived_many(self, x: np.ndarray) -> np.ndarray:
        n = self.duration_s
        xc = np.clip(x, 0.0, float(n))
        k = np.minimum(xc.astype(np.int64), n - 1)
        return np.asarray(self._arrived[k] + self._w[k] * (xc - k), dtype=float)

    def _next_tick(self, t: float) -> float:
        """The first trigger tick strictly after t."""
        return (math.floor(t / self.trigger_s + _EPS_S) + 1) * self.trigger_s

    def _is_tick(self, t: float) -> bool:
        q = t / self.trigger_s
        return abs(q - round(q)) < 1e-7

    def _tick_with_data(self, t: float) -> float:
        """The first tick at or after t at which records wait (inf: none arrive any more)."""
        need = self._taken + _EPS_RECORDS
        n = self.duration_s
        if self._arrived[n] <= need:
            return math.inf
        k = int(np.searchsorted(self._arrived, need, side="right")) - 1  # arrived[k] <= need < arrived[k + 1]
        x = max(t, k + (need - float(self._arrived[k])) / float(self._w[k]))
        tick = math.ceil(x / self.trigger_s - _EPS_S) * self.trigger_s
        if self._arrived_at(tick) <= need:
            tick += self.trigger_s
        return tick

    def _registered(self, t: float) -> tuple[int, ...]:
        return tuple(int(i) for i in np.flatnonzero(self._ready[: self.scaleout] <= t))

    # ---- batches -----------------------------------------------------------------------------------------------

    def advance(self, until_s: int) -> None:
        until_s = min(until_s, self.duration_s)
        if until_s <= self.now_s:
            return
        self._run_batches(float(until_s))
        self._flush(self.now_s, until_s)
        self.now_s = until_s

    def _run_batches(self, until: float) -> None:
        """Every batch that starts before `until`."""
        while self._next_start < until:
            start = self._next_start
            waiting = self._arrived_at(start) - self._taken
            if waiting <= _EPS_RECORDS:
                self._next_start = self._tick_with_data(start)
                continue
            if self._vector_ok and self._is_tick(start) and self._steady_stretch(start, until) > 0:
                continue
            self._one_batch(start, waiting)

    def _one_batch(self, start: float, waiting: float) -> None:
        records = min(waiting, self.cap) if self.cap is not None else waiting
        slots = self._registered(start)
        layout = self.waves.layout(slots)
        avail: list[float] | None = None
        stalls = self._stall[list(slots)]
        if stalls.any():
            avail = [float(stalls[slots.index(int(s))]) for s in layout.core_slot]
            self._stall[list(slots)] = 0.0
        finish, recs = layout.finish(records, avail)
        end = start + self.overhead_s + max(finish)
        self._add_batch_intervals(start, layout, avail, finish, recs)
        self._record_batch(start, end, records)
        self._slots.append(slots)
        self._avail.append(avail)
        self._last = _Batch(len(self._ends) - 1, start, end, records, slots, avail, finish, recs)
        self._next_start = max(end, self._next_tick(start))
        self._vector_ok = records >= waiting - _EPS_RECORDS and end - start <= self.trigger_s + _EPS_S

    def _add_batch_intervals(
        self, start: float, layout: Layout, avail: list[float] | None, finish: list[float], recs: list[float]
    ) -> None:
        u0 = start + self.overhead_s
        busy = 1.0 / self.cores
        slot_of = layout.core_slot.tolist()
        for j, (fin, r) in enumerate(zip(finish, recs, strict=True)):
            a = avail[j] if avail else 0.0
            if a > 0:
                self._intervals.append((u0, u0 + a, slot_of[j], 0.0, busy))
            if fin > a:
                self._intervals.append((u0 + a, u0 + fin, slot_of[j], r / (fin - a), busy))

    def _record_batch(self, start: float, end: float, records: float) -> None:
        self._taken += records
        self._starts.append(start)
        self._ends.append(end)
        self._offs.append(self._taken)
        self._count_batch(end, end - start, records, +1.0)

    def _count_batch(self, end: float, seconds: float, records: float, sign: float) -> None:
        cell = int(end)
        if cell < self.duration_s:
            self.batch_count[cell] += sign
            self.batch_records[cell] += sign * records
            self.batch_seconds[cell] += sign * seconds

    def _steady_stretch(self, start: float, until: float) -> int:
        """Batches on consecutive ticks from `start` that take everything and end within the trigger, computed at
        once; stops before the first that does not (or at an executor's registration). Returns how many ticks."""
        t = self.trigger_s
        horizon = until
        pending = self._ready[: self.scaleout]
        later = pending[pending > start]
        if len(later):
            horizon = min(horizon, float(later.min()))
        slots = self._registered(start)
        if self._stall[list(slots)].any():
            return 0
        ticks_left = math.ceil((horizon - start) / t - _EPS_S)
        k = min(ticks_left, self._lookahead)
        if k <= 0:
            return 0
        ticks = start + t * np.arange(k)
        arrived = self._arrived_many(ticks)
        records = np.diff(np.concatenate(([self._taken], arrived)))
        layout = self.waves.layout(slots)
        finish, recs = layout.finish_many(records)
        makespan = finish.max(axis=1)
        real = records > _EPS_RECORDS
        ok = (self.overhead_s + makespan <= t + _EPS_S) | ~real
        if self.cap is not None:
            ok &= records <= self.cap + _EPS_RECORDS
        m = int(np.argmin(ok)) if not ok.all() else k
        if m < k:
            self._vector_ok, self._lookahead = False, _FIRST_LOOKAHEAD
        else:
            self._lookahead = min(self._lookahead * 2, 1 << 20)
        if m == 0:
            return 0
        sel = np.flatnonzero(real[:m])
        if len(sel):
            starts = ticks[sel]
            ends = starts + self.overhead_s + makespan[sel]
            self._add_interval_arrays(starts + self.overhead_s, finish[sel], recs[sel], layout)
            offs = arrived[sel]
            self._starts.extend(starts.tolist())
            self._ends.extend(ends.tolist())
            self._offs.extend(offs.tolist())
            self._slots.extend([slots] * len(sel))
            self._avail.extend([None] * len(sel))
            cells = ends.astype(np.int64)
            inside = cells < self.duration_s
            np.add.at(self.batch_count, cells[inside], 1.0)
            np.add.at(self.batch_records, cells[inside], records[sel][inside])
            np.add.at(self.batch_seconds, cells[inside], (ends - starts)[inside])
            i = int(sel[-1])
            self._last = _Batch(
                len(self._ends) - 1,
                float(ticks[i]),
                float(ends[-1]),
                float(records[i]),
                slots,
                None,
                finish[i].tolist(),
                recs[i].tolist(),
            )
        self._taken = float(arrived[m - 1])
        self._next_start = float(ticks[m - 1]) + t
        return m

    def _add_interval_arrays(self, u0: np.ndarray, finish: np.ndarray, recs: np.ndarray, layout: Layout) -> None:
        used = finish > 0
        rows, cores = np.nonzero(used)
        u = u0[rows]
        v = u + finish[rows, cores]
        rate = recs[rows, cores] / finish[rows, cores]
        slot = layout.core_slot[cores]
        self._interval_arrays.append((u, v, slot, rate, np.full(len(u), 1.0 / self.cores)))

    def batch_log(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every batch started so far (an abandoned one removed): start, end and records, in order."""
        offs = np.asarray(self._offs)
        records = np.diff(np.concatenate(([0.0], offs))) if len(offs) else offs
        return np.asarray(self._starts), np.asarray(self._ends), records

    def task_phases(self, t0: float, t1: float) -> list[TaskPhase]:
        """The task phases of the batches that run in [t0, t1), in order (a scale-in's retried tasks not shown)."""
        out: list[TaskPhase] = []
        i = bisect.bisect_left(self._starts, t1) - 1
        while i >= 0 and self._ends[i] > t0:
            records = self._offs[i] - (self._offs[i - 1] if i else 0.0)
            layout = self.waves.layout(self._slots[i])
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

    # ---- per-second series -------------------------------------------------------------------------------------

    def _apply_intervals(self) -> None:
        parts = list(self._interval_arrays)
        if self._intervals:
            a = np.asarray(self._intervals, dtype=float)
            parts.append((a[:, 0], a[:, 1], a[:, 2].astype(np.int64), a[:, 3], a[:, 4]))
        self._intervals, self._interval_arrays = [], []
        if not parts:
            return
        u, v, slot, rate, busy = (np.concatenate(c) for c in zip(*parts, strict=True))
        n = float(self.duration_s)
        for x, sign in ((u, 1.0), (v, -1.0)):
            x = np.clip(x, 0.0, n)
            cell = x.astype(np.int64)
            frac = x - cell
            for diff, value in ((self._diff_thr, rate), (self._diff_busy, busy)):
                np.add.at(diff, (cell, slot), sign * value * (1.0 - frac))
                np.add.at(diff, (cell + 1, slot), sign * value * frac)

    def _flush(self, t0: int, t1: int) -> None:
        self._apply_intervals()
        thr = self._carry_thr + np.cumsum(self._diff_thr[t0:t1], axis=0)
        busy = self._carry_busy + np.cumsum(self._diff_busy[t0:t1], axis=0)
        self._carry_thr, self._carry_busy = thr[-1].copy(), busy[-1].copy()
        n = self.scaleout
        thr = np.maximum(thr, 0.0)
        busy = np.clip(busy, 0.0, 1.0)
        self.executor_throughput_per_s[t0:t1] = thr
        self.busy_ratio[t0:t1] = busy
        self.processed_per_s[t0:t1] = thr.sum(axis=1)
        noise = self._rng.normal(0.0, self.model.utilization_noise_ratio, size=(t1 - t0, n))
        idle = self.model.cpu_idle_ratio
        self.cpu_ratio[t0:t1, :n] = np.clip(idle + (1.0 - idle) * busy[:, :n] + noise, 0.0, 1.0)
        self.cpu_ratio[t0:t1, n:] = 0.0
        self.scaleout_at[t0:t1] = n
        self.processing_at[t0:t1] = np.arange(t0, t1) >= self.restart_end_s
        samples = np.arange(t0 + 1, t1 + 1, dtype=float)
        ends = np.asarray(self._ends[self._lag_from :])
        offs = np.asarray(self._offs[self._lag_from :])
        done = np.searchsorted(ends, samples, side="right")
        committed = np.where(done > 0, offs[np.maximum(done - 1, 0)] if len(offs) else 0.0, self._committed_before)
        lag = np.maximum(self._arrived[t0 + 1 : t1 + 1] - committed, 0.0)
        self.backlog_records[t0:t1] = lag
        finished = int(done[-1]) if len(done) else 0
        if finished:
            self._committed_before = float(offs[finished - 1])
            self._lag_from += finished
        self._backlog = float(lag[-1])

    def finish(self) -> None:
        """Per-second latency, once the run is over: a second's records leave with the batch that holds its middle
        record (arrival to commit); those still waiting at the end are charged the time to the end plus the lag
        over the catch-up capacity."""
        n = self.duration_s
        if not n:
            return
        secs = np.arange(n, dtype=float) + 0.5
        middle = self._arrived[:-1] + 0.5 * self._w
        ends = np.asarray(self._ends)
        offs = np.asarray(self._offs)
        idx = np.searchsorted(offs, middle - _EPS_RECORDS, side="left") if len(offs) else np.zeros(n, np.int64)
        found = idx < len(offs)
        rate = max(float(self.capacity.catchup_capacity_per_s[max(self.scaleout, 1) - 1]), 1e-9)
        left = (n - secs) + self._backlog / rate
        latency = np.where(found, ends[np.minimum(idx, max(len(ends) - 1, 0))] - secs if len(ends) else 0.0, left)
        nominal = 0.5 * self.trigger_s + self.overhead_s
        self.latency_s[:] = np.where(self._w > 0, np.maximum(latency, 0.0), nominal)

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
        layout = self.waves.layout(b.slots)
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
            layout = self.waves.layout(b.slots)
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
            self._taken -= b.records
            self._last = None
        self.rescales.append(Rescale(self.now_s, self.scaleout, target, downtime, replay))
        self.scaleout, self.restart_end_s = target, self.now_s + downtime
        self._ready[:target], self._ready[target:] = now + downtime, math.inf
        self._stall[:] = 0.0
        self._next_start = now + downtime
        self._vector_ok = True
        return True

    # ---- what the monitor sees ---------------------------------------------------------------------------------

    def observation(self, since_s: int) -> Observation:
        t1 = self.now_s
        t0 = max(0, since_s)
        if self.in_place:
            listed = [i for i in range(self.scaleout) if self._ready[i] <= t1 - 1]
            joined = [math.ceil(self._ready[i]) for i in listed if math.isfinite(self._ready[i])]
            t0 = max([t0, *joined])
            uptime = float(t1)
        else:
            listed = list(range(self.scaleout))
            uptime = self.uptime_s()
        t0 = min(t0, t1 - 1) if t1 > 0 else 0
        signal = self.cpu_ratio if self.cpu_signal else self.busy_ratio
        executors = tuple(
            ExecutorSeries(
                executor_id=f"executor-{self._ids[i]}",
                throughput_per_s=tuple(self.executor_throughput_per_s[t0:t1, i].tolist()),
                utilization_ratio=tuple(signal[t0:t1, i].tolist()),
            )
            for i in listed
        )
        arriving = float(self.workload_per_s[t0:t1].mean()) if t1 > t0 else 0.0
        return Observation(
            time_s=float(t1),
            step_s=1.0,
            workload_per_s=tuple(self.workload_per_s[t0:t1].tolist()),
            executors=executors,
            consumer_lag_records=self._backlog,
            scaleout=len(listed),
            uptime_s=uptime,
            partitions=tuple(
                PartitionLoad(self.model.topic, p, arriving * float(w))
                for p, w in enumerate(self.capacity.partition_weights)
            ),
            batches=BatchWindow(
                batches=float(self.batch_count[t0:t1].sum()),
                input_records=float(self.batch_records[t0:t1].sum()),
                duration_s=float(self.batch_seconds[t0:t1].sum()),
            ),
        )
