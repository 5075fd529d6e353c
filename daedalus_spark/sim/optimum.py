"""Simulation: the offline optimum — the cheapest schedule of scale-outs at the loop's decision points that keeps
every recovery within the target, found by dynamic programming with perfect knowledge of the trace.

Model (the simulated job's, sim/job.py, taken at its worst case so that the replay can only do better):
- decisions at the loop's decision points t = k * loop_interval_s (k >= 1), as run_policy calls a policy; the
  scale-out of the first interval is free to choose (other policies start at max_scaleout);
- a rescale stops processing for the LONGEST downtime of its direction (DowntimeModel.high_s) and replays the records
  processed in the last `checkpoint_interval_s` seconds (the longest checkpoint age); the job draws both uniformly,
  so its downtime and replay are never larger. Backlog follows the same Lindley recursion (job.lindley);
- constraints: every rescale recovers (lag <= one second of arrivals, metrics.recoveries) within the recovery
  target (metrics.recovery_violations' definition, but also before the trace ends, which metrics excuses), and no
  rescale starts before the previous one recovered (so a recovery is judged with its scale-out held); and, because
  a policy that never rescales has no recovery to miss, the lag must stay bounded: every second's latency (the
  job's latency_s) within the recovery target. The best static that meets these is what the optimum is compared to;
- objective: executor-seconds (scale-out summed per second, as metrics.summarize counts executor-hours);
- optionally at most `max_rescales` rescales (policy `optimum:R`: R rescales per 20 minutes on average), the
  yardstick for a controller held to that rate, which the unlimited optimum exceeds on fast cycles.

Approximation: the state is (decision index, scale-out[, rescales so far]). The backlog, the records to replay and
the time of the last recovery are carried from the cheapest path into each state (ties: the smaller backlog), not
enumerated; a dearer path that arrives with less backlog is dropped, so the result is an upper bound on the true
optimum of this model. It is verified by replaying the schedule through the simulated job (run_optimum), which
yields the figures.

The micro-batch engine (sim/microbatch.py) is planned with the same fluid backlog, at the steady-state capacity at
the trigger of every scale-out (SimulatedCapacity.job_capacity_per_s: the task waves and the per-batch costs are in
it), and these differences:
- keeping up: a micro-batch job falls behind (metrics: more lag than two triggers of arrivals) as soon as a batch
  overruns its trigger, i.e. as soon as one second's arrivals exceed the steady capacity, so the plan allows no
  backlog beyond one record outside a recovery (the continuous job's plan allows one second of arrivals);
- an in-place scale-out (rescale: in_place) keeps the old capacity until the earliest registration, then nothing
  until the latest registration + the longest stall + one trigger + the batch overhead (the stalled batch may start
  up to a trigger after the registration and commits only after the stall), then the new capacity; no replay.
  This window covers every draw, so the plan's capacity is below the job's at every second; the job also works off
  a backlog faster than planned (catch-up capacity, larger batches);
- an in-place scale-in: nothing from the request until the longest leave + one trigger + the batch overhead (the
  running batch waits for its retried tasks), then the new capacity; no replay;
- a driver restart of a micro-batch job replays the uncommitted batch: bounded by what was processed in the last
  two triggers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.sim.job import SimulatedJob, lindley
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.policies import OPTIMUM
from daedalus_spark.sim.runner import RunResult, SimSetup, run_policy


class OptimumInfeasible(ValueError):
    """No schedule within min..max scale-out keeps latency and every recovery within the target."""


@dataclass(frozen=True)
class OptimumSchedule:
    """The scale-out of each loop interval (index k covers [k * interval_s, (k + 1) * interval_s))."""

    interval_s: int
    scaleouts: tuple[int, ...]
    executor_seconds: float  # the DP's own estimate (worst-case downtimes); the replay gives the reported figure

    @property
    def rescales(self) -> int:
        return sum(1 for a, b in zip(self.scaleouts, self.scaleouts[1:], strict=False) if a != b)


@dataclass
class ReplayPolicy:
    """Replays a fixed schedule: scale-out `scaleouts[k]` from decision point k * sync_interval_s on."""

    scaleouts: tuple[int, ...]
    sync_interval_s: int | None
    name: str = OPTIMUM

    @property
    def initial_scaleout(self) -> int:
        return self.scaleouts[0]

    def decide(self, job: SimulatedJob) -> int | None:
        step = self.sync_interval_s or job.duration_s
        k = min(job.now_s // step, len(self.scaleouts) - 1)
        return self.scaleouts[k]


def _lindley_rows(backlog0: float, arrivals: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """job.lindley for several capacity rows at once: capacity (rows, seconds), one starting backlog."""
    s = np.cumsum(arrivals[None, :] - capacity, axis=1)
    floor = np.minimum(np.minimum.accumulate(s, axis=1), -backlog0)
    return np.asarray(np.maximum(s - floor, 0.0), dtype=float)


def _processed(backlog0: float, arrivals: np.ndarray, lag: np.ndarray) -> np.ndarray:
    """Records processed each second, from the backlog before, the arrivals and the backlog after (Lindley)."""
    before = np.concatenate(([backlog0], lag[:-1]))
    return np.asarray(np.maximum(before + arrivals - lag, 0.0), dtype=float)


def solve_optimum(setup: SimSetup, *, max_rescales: int | None = None) -> OptimumSchedule:
    """The DP over (decision point, scale-out[, rescales made]); raises OptimumInfeasible when no schedule meets the
    constraints (with `max_rescales`, none that rescales at most that often)."""
    w = setup.workload_per_s
    total = len(w)
    ctl = setup.config.controller
    model = setup.job_model
    interval = max(1, round(ctl.loop_interval_s))
    target = float(ctl.target_recovery_s)
    base = model.base_latency_s
    lo, hi = max(1, ctl.min_scaleout), setup.max_scaleout
    sizes = np.arange(lo, hi + 1)
    caps = np.asarray(setup.capacity.job_capacity_per_s[sizes - 1], dtype=float)
    nsz = len(sizes)
    stops = rescale_stops(model)
    (out_from, out_to), (in_from, in_to) = stops
    micro = model.engine == "microbatch"
    ckpt = math.ceil(2.0 * model.microbatch.trigger_s) if micro else math.ceil(model.checkpoint_interval_s)
    if model.rescale == "in_place":
        ckpt = 0  # nothing to replay
    horizon = max(math.ceil(target) + 1, interval)
    caught_floor = np.full(total, 1.0) if micro else np.maximum(w, 1.0)
    segments = max(1, math.ceil(total / interval))
    # Column b of every state array: paths that have rescaled b times (one column when rescales are not limited).
    levels = 1 if max_rescales is None else max_rescales + 1
    spent = 0 if max_rescales is None else 1  # columns a rescale moves to the right

    inf = math.inf
    cost = np.full((nsz, levels), inf)
    backlog = np.zeros((nsz, levels))
    tail = np.zeros((nsz, levels))  # records processed in the last `ckpt` seconds: the replay of a rescale now
    recovered = np.zeros((nsz, levels))  # second by which the last rescale has recovered
    restart = np.zeros((nsz, levels))  # second processing (re)starts after the last rescale
    parents = np.full((segments, nsz, levels), -1, dtype=np.int64)  # the previous interval's scale-out index

    def tail_of(processed: np.ndarray, cap: float, downtime_end: int = 0) -> float:
        """Upper bound of the replay of a rescale at the end of this interval. Within a downtime the job (whose
        downtime may be shorter than the worst case) may already process, so there the bound is capacity."""
        if ckpt <= 0:
            return 0.0
        if ckpt <= len(processed) - downtime_end:
            return float(processed[-ckpt:].sum())
        return cap * ckpt

    # First interval: any scale-out, processing from t=0 with an empty backlog.
    end0 = min(interval, total)
    arr0 = w[:end0]
    rows0 = _lindley_rows(0.0, arr0, np.repeat(caps[:, None], end0, axis=1))
    lat0 = base + rows0 / caps[:, None]
    for j in range(nsz):
        if float(lat0[j].max(initial=0.0)) <= target and bool((rows0[j] <= caught_floor[:end0]).all()):
            processed = _processed(0.0, arr0, rows0[j])
            cost[j, 0], backlog[j, 0] = float(sizes[j]) * end0, float(rows0[j, -1])
            tail[j, 0] = tail_of(processed, caps[j])
    if not np.isfinite(cost).any():
        raise OptimumInfeasible(_infeasible_message(0, hi))

    for k in range(1, segments):
        t0, t1 = k * interval, min((k + 1) * interval, total)
        seg = t1 - t0
        arr = w[t0:t1]
        new_cost = np.full((nsz, levels), inf)
        new_state = np.zeros((4, nsz, levels))  # backlog, tail, recovered, restart
        h1 = min(total, t0 + horizon)
        arr_h = w[t0:h1]
        secs = np.arange(t0, h1)
        for i, b in zip(*np.nonzero(np.isfinite(cost)), strict=True):
            c_prev, b_prev = cost[i, b], backlog[i, b]
            # hold scale-out i
            cap_row = np.where(np.arange(t0, t1) < restart[i, b], 0.0, caps[i])
            lag = lindley(b_prev, arr, cap_row)
            wait = np.maximum(restart[i, b] - np.arange(t0, t1), 0.0)
            behind = (lag > caught_floor[t0:t1]) & (np.arange(t0, t1) >= recovered[i, b])
            down_left = int(max(0.0, restart[i, b] - t0))
            if float((base + wait + lag / caps[i]).max()) <= target and not behind.any():
                c = c_prev + float(sizes[i]) * seg
                if c < new_cost[i, b] or (c == new_cost[i, b] and lag[-1] < new_state[0, i, b]):
                    processed = _processed(b_prev, arr, lag)
                    new_cost[i, b] = c
                    tail_i = tail_of(processed, caps[i], down_left)
                    new_state[:, i, b] = (lag[-1], tail_i, recovered[i, b], restart[i, b])
                    parents[k, i, b] = i
            # rescale i -> j, only once the previous rescale has recovered and while the budget allows
            nb = b + spent
            if recovered[i, b] > t0 or restart[i, b] > t0 or nb >= levels:
                continue
            others = np.flatnonzero(np.arange(nsz) != i)
            up = sizes[others] > sizes[i]
            stop_from = np.where(up, out_from, in_from)[:, None]
            downs = np.where(up, out_to, in_to)
            offset = secs[None, :] - t0
            cap_m = np.where(offset < stop_from, caps[i], np.where(offset < downs[:, None], 0.0, caps[others][:, None]))
            lags = _lindley_rows(b_prev + tail[i, b], arr_h, cap_m)
            waits = np.where(offset >= stop_from, np.maximum(downs[:, None] - offset, 0), 0)
            lat = base + waits + lags / caps[others][:, None]
            caught = (lags <= caught_floor[t0:h1][None, :]) & (offset >= downs[:, None])
            any_hit = caught.any(axis=1)
            first = np.argmax(caught, axis=1)
            rec_at = np.where(any_hit, t0 + first + 1, total + 1)
            # once recovered, the lag must stay caught up for the rest of the interval
            behind = ~caught[:, :seg] & (secs[None, :seg] >= rec_at[:, None])
            ok_lat = (lat[:, :seg].max(axis=1) <= target) & ~behind.any(axis=1)
            # Stricter than metrics.recovery_violations at the end of the trace: a recovery still under way when
            # the trace ends is refused, else the optimum would drop executors in the last `target` seconds for free.
            ok_rec = any_hit & (first + 1 <= target)
            for r in np.flatnonzero(ok_lat & ok_rec):
                j = int(others[r])
                c = c_prev + float(sizes[j]) * seg
                if c < new_cost[j, nb] or (c == new_cost[j, nb] and lags[r, seg - 1] < new_state[0, j, nb]):
                    row = lags[r, :seg]
                    processed = _processed(b_prev + tail[i, b], arr, row)
                    new_cost[j, nb] = c
                    tail_j = tail_of(processed, caps[j], int(downs[r]))
                    new_state[:, j, nb] = (row[-1], tail_j, rec_at[r], t0 + downs[r])
                    parents[k, j, nb] = i
        if not np.isfinite(new_cost).any():
            raise OptimumInfeasible(_infeasible_message(t0, hi))
        cost = new_cost
        backlog, tail, recovered, restart = new_state

    last, b = (int(x) for x in np.unravel_index(int(np.argmin(cost)), cost.shape))
    best = float(cost[last, b])
    path = [last]
    for k in range(segments - 1, 0, -1):
        i = int(parents[k, path[-1], b])
        if i != path[-1]:
            b -= spent
        path.append(i)
    path.reverse()
    return OptimumSchedule(interval, tuple(int(sizes[j]) for j in path), best)


def rescale_stops(model: JobModel) -> tuple[tuple[int, int], tuple[int, int]]:
    """(from, to) seconds after a rescale's request in which the plan gives the job no capacity, for a scale-out
    and a scale-in: the old capacity before `from`, the new one from `to` on (worst cases of the job model)."""
    if model.rescale == "in_place":
        mb, ip = model.microbatch, model.in_place
        settle = mb.trigger_s + mb.batch_overhead_s
        out = (math.floor(ip.registration.low_s), math.ceil(ip.registration.high_s + ip.stall.high_s + settle))
        return out, (0, math.ceil(ip.leave.high_s + settle))
    return (0, math.ceil(model.downtime_scale_out.high_s)), (0, math.ceil(model.downtime_scale_in.high_s))


def _infeasible_message(t_s: int, max_scaleout: int) -> str:
    return (
        f"offline optimum infeasible: from second {t_s} no schedule of up to {max_scaleout} executors keeps every "
        "second's latency and every recovery within the recovery target (the load needs more than max_scaleout)"
    )


def run_optimum(setup: SimSetup, schedule: OptimumSchedule | None = None) -> RunResult:
    """The optimum's schedule replayed through the simulated job (the figures every policy is judged by)."""
    schedule = schedule or solve_optimum(setup)
    return run_policy(setup, ReplayPolicy(schedule.scaleouts, schedule.interval_s))
