"""Simulation: the micro-batch engine's batches (JobModel.engine: microbatch); rescales are in microbatch.py.

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
- with `startup`, the first batch waits for the query's start and the initial executors stall in it (cold); the
  job reports no metrics before that batch commits (`reporting_since_s`), as a live query without progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.sim.job import SimulatedJob
from daedalus_spark.sim.jobmodel import StartupModel
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
    warming: tuple[int, ...]  # the slots whose executors were still warming up (in_place.warmup_s)
    avail: list[float] | None  # per core, seconds after the task phase starts before it takes tasks (stalls)
    finish: list[float]  # per core, when its last task ends (same origin)
    recs: list[float]  # per core, records


class BatchEngine(SimulatedJob):
    """Micro-batches at the scale-out the job has: triggers, batches, the per-second series and latency (rescales and
    what the monitor sees: MicroBatchJob)."""

    def _set_up(self, initial_scaleout: int) -> None:
        """The batch engine's state, after the shared constructor (SimulatedJob's)."""
        capacity, model = self.capacity, self.model
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
        self._warming: list[tuple[int, ...]] = []  # per batch: the executors still warming up it ran on
        self._lag_from = 0  # first batch that may end after the last flushed second
        self._committed_before = 0.0  # offset committed by then
        self._ready = np.full(slots, -math.inf)  # when each slot's executor registered (inf: not alive)
        self._ready[initial_scaleout:] = math.inf
        self._stall = np.zeros(slots)  # stall pending for the first batch the slot's executor takes
        self._warm_until = np.full(slots, -math.inf)  # when each slot's executor is warm (after its stall)
        self._joined = np.zeros(slots, dtype=bool)  # a joining executor whose warm-up starts with its first batch
        self.warmup_s, self.warm_ratio = model.in_place.warmup_s, model.in_place.warmup_capacity_ratio
        self._ids = list(range(slots))
        self._next_id = initial_scaleout
        self._taken = 0.0  # offset up to which records went into batches
        self._next_start = 0.0  # earliest start of the next batch
        self._last: _Batch | None = None
        self._vector_ok = True
        self._lookahead = _FIRST_LOOKAHEAD
        if model.startup is not None:
            self._start_query(model.startup, initial_scaleout)

    def _start_query(self, startup: StartupModel, initial_scaleout: int) -> None:
        """The first batch waits for the query's start (the first tick after it); the initial executors stall in it."""
        begins = float(self._rng.uniform(startup.query_start.low_s, startup.query_start.high_s))
        stall = float(self._rng.uniform(startup.first_batch_stall.low_s, startup.first_batch_stall.high_s))
        self._next_start = math.ceil(begins / self.trigger_s - _EPS_S) * self.trigger_s
        self._stall[:initial_scaleout] = stall

    def reporting_since_s(self) -> float:
        """With `startup`, the query's first commit: before it, no progress and no offsets reach the monitor (inf:
        not yet). Without, the job reports from its first second, as the simulator always had it."""
        if self.model.startup is None:
            return 0.0
        return self._ends[0] if self._ends else math.inf

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
        avail: list[float] | None = None
        stalls = self._stall[list(slots)]
        for slot in (slots[int(i)] for i in np.flatnonzero(self._joined[list(slots)])):
            # a joining executor's first batch: it warms up after its stall
            self._warm_until[slot] = start + self.overhead_s + self._stall[slot] + self.warmup_s
            self._joined[slot] = False
        warming = tuple(s for s in slots if self._warm_until[s] > start)
        layout = self.waves.layout(slots, warming, self.warm_ratio)
        if stalls.any():
            avail = [float(stalls[slots.index(int(s))]) for s in layout.core_slot]
            self._stall[list(slots)] = 0.0
        finish, recs = layout.finish(records, avail)
        end = start + self.overhead_s + max(finish)
        self._add_batch_intervals(start, layout, avail, finish, recs)
        self._record_batch(start, end, records)
        self._slots.append(slots)
        self._avail.append(avail)
        self._warming.append(warming)
        self._last = _Batch(len(self._ends) - 1, start, end, records, slots, warming, avail, finish, recs)
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
        if self._stall[list(slots)].any() or (self._warm_until[list(slots)] > start).any():
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
        self._record_stretch(ticks[:m], records[:m], arrived[:m], finish[:m], recs[:m], makespan[:m], layout, slots)
        self._taken = float(arrived[m - 1])
        self._next_start = float(ticks[m - 1]) + t
        return m

    def _record_stretch(
        self,
        ticks: np.ndarray,
        records: np.ndarray,
        arrived: np.ndarray,
        finish: np.ndarray,
        recs: np.ndarray,
        makespan: np.ndarray,
        layout: Layout,
        slots: tuple[int, ...],
    ) -> None:
        """The batches of a steady stretch that took records, logged and counted as `_one_batch` logs each."""
        sel = np.flatnonzero(records > _EPS_RECORDS)
        if not len(sel):
            return
        starts = ticks[sel]
        ends = starts + self.overhead_s + makespan[sel]
        self._add_interval_arrays(starts + self.overhead_s, finish[sel], recs[sel], layout)
        offs = arrived[sel]
        self._starts.extend(starts.tolist())
        self._ends.extend(ends.tolist())
        self._offs.extend(offs.tolist())
        self._slots.extend([slots] * len(sel))
        self._avail.extend([None] * len(sel))
        self._warming.extend([()] * len(sel))
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
            (),
            None,
            finish[i].tolist(),
            recs[i].tolist(),
        )

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
