"""Plan: the cheapest schedule of scale-outs over a known load that keeps every second's latency and every recovery
within the target — dynamic programming over the loop's decision points, shared by the horizon planner (over the
forecast) and the offline optimum (over the whole trace, sim/optimum.py).

The job, as the schedule sees it (a fluid queue):
- scale-out n processes up to `capacity_per_s[n]` records a second; the backlog follows the Lindley recursion
  b(t) = max(0, b(t-1) + arrivals(t) - capacity(t));
- a rescale requested at t gives the old capacity until t + stop.start_s, none until t + stop.end_s (the downtime),
  then the new capacity, and adds the records processed in the last `replay_s` seconds to the backlog (replay from
  the checkpoint);
- constraints: latency (base + the downtime left + backlog / capacity) within the target at every second; outside a
  recovery the backlog stays within `caught_up_records` of that second; a rescale recovers (the backlog back within
  that bound) within the target, and the next rescale waits for it; optionally at most `max_rescales` rescales;
- objective: executor-seconds.

Approximation: the state is (decision index, scale-out[, rescales so far]). The backlog, the records to replay and
the times of the last recovery are carried from the cheapest path into each state (ties: the smaller backlog), not
enumerated; a dearer path that arrives with less backlog is dropped, so the result is an upper bound on the true
optimum of this model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class ScheduleInfeasible(ValueError):
    """No schedule within the scale-outs given keeps latency and every recovery within the target."""

    def __init__(self, t_s: int, max_scaleout: int) -> None:
        super().__init__(
            f"no schedule from second {t_s} on of up to {max_scaleout} executors keeps every second's latency and "
            "every recovery within the recovery target (the load needs more than max_scaleout)"
        )
        self.t_s = t_s


@dataclass(frozen=True)
class Stop:
    """Seconds after a rescale's request: the old capacity before `start_s`, none until `end_s`, then the new one."""

    start_s: int
    end_s: int


@dataclass(frozen=True)
class QueueModel:
    """What a schedule knows of the job."""

    scaleouts: tuple[int, ...]  # the scale-outs it may choose, ascending
    capacity_per_s: tuple[float, ...]  # records/s at each of them
    target_recovery_s: float
    scale_out_stop: Stop
    scale_in_stop: Stop
    replay_s: int = 0  # seconds of processed records a rescale replays
    base_latency_s: float = 0.0


@dataclass(frozen=True)
class Start:
    """The job when the schedule starts: its scale-out and backlog, and, for a backlog it must still work off, the
    second by which it must have (within the target, like a recovery)."""

    scaleout: int
    backlog_records: float = 0.0
    catch_up_by_s: int = 0


@dataclass(frozen=True)
class Schedule:
    """The scale-out of each decision interval (index k covers [k * interval_s, (k + 1) * interval_s))."""

    interval_s: int
    scaleouts: tuple[int, ...]
    executor_seconds: float  # what the fluid model charges; a replay through a job gives the measured figure

    @property
    def rescales(self) -> int:
        return sum(1 for a, b in zip(self.scaleouts, self.scaleouts[1:], strict=False) if a != b)


def lindley(backlog0: float, arrivals: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Backlog after each second: b(t) = max(0, b(t-1) + arrivals(t) - capacity(t)), without a Python loop
    (capacity may be a matrix of several rows, one starting backlog for all)."""
    s = np.cumsum(arrivals - capacity, axis=-1)
    floor = np.minimum(np.minimum.accumulate(s, axis=-1), -backlog0)
    return np.asarray(np.maximum(s - floor, 0.0), dtype=float)


def _tails(
    backlog0: float, arrivals: np.ndarray, lags: np.ndarray, caps: np.ndarray, downs: np.ndarray, ckpt: int
) -> np.ndarray:
    """Upper bound of the replay of a rescale at the end of an interval, for each row of lags (backlog after each
    second, from `backlog0` before): the records processed in its last `ckpt` seconds, or capacity x `ckpt` where
    those seconds reach into the row's downtime (the job, whose downtime may be shorter than the worst case, may
    already process there)."""
    if ckpt <= 0:
        return np.zeros(len(lags))
    before = np.concatenate([np.full((len(lags), 1), backlog0), lags[:, :-1]], axis=1)
    processed = np.maximum(before + arrivals[None, :] - lags, 0.0)
    inside = ckpt <= lags.shape[1] - downs
    return np.asarray(np.where(inside, processed[:, -ckpt:].sum(axis=1), caps * ckpt), dtype=float)


def cheapest_schedule(
    arrivals: np.ndarray,
    model: QueueModel,
    *,
    interval_s: int,
    caught_up_records: np.ndarray,
    start: Start | None = None,
    max_rescales: int | None = None,
) -> Schedule:
    """The DP over (decision point, scale-out[, rescales made]). Without `start` the first interval's scale-out is
    free and the backlog empty (the offline optimum); with it the job starts there and the first interval is already
    a decision (hold or rescale at second 0). Raises ScheduleInfeasible when nothing meets the constraints."""
    w = np.asarray(arrivals, dtype=float)
    total = len(w)
    interval = max(1, int(interval_s))
    target = float(model.target_recovery_s)
    base = model.base_latency_s
    sizes = np.asarray(model.scaleouts)
    caps = np.asarray(model.capacity_per_s, dtype=float)
    nsz = len(sizes)
    out_from, out_to = model.scale_out_stop.start_s, model.scale_out_stop.end_s
    in_from, in_to = model.scale_in_stop.start_s, model.scale_in_stop.end_s
    ckpt = model.replay_s
    horizon = max(math.ceil(target) + 1, interval)
    floor_ = np.asarray(caught_up_records, dtype=float)
    segments = max(1, math.ceil(total / interval))
    # Column b of every state array: paths that have rescaled b times (one column when rescales are not limited).
    levels = 1 if max_rescales is None else max(0, max_rescales) + 1
    spent = 0 if max_rescales is None else 1  # columns a rescale moves to the right

    inf = math.inf
    cost = np.full((nsz, levels), inf)
    backlog = np.zeros((nsz, levels))
    tail = np.zeros((nsz, levels))  # records processed in the last `ckpt` seconds: the replay of a rescale now
    recovered = np.zeros((nsz, levels))  # second by which the backlog has been worked off (no "behind" before)
    gate = np.zeros((nsz, levels))  # second from which the next rescale may start (the last one has recovered)
    restart = np.zeros((nsz, levels))  # second processing (re)starts after the last rescale
    parents = np.full((segments, nsz, levels), -1, dtype=np.int64)  # the previous interval's scale-out index

    first = 0  # the first interval decided in the loop
    if start is None:  # first interval: any scale-out, processing from t=0 with an empty backlog
        first = 1
        end0 = min(interval, total)
        arr0 = w[:end0]
        rows0 = lindley(0.0, arr0, np.repeat(caps[:, None], end0, axis=1))
        lat0 = base + rows0 / caps[:, None]
        ok = (lat0.max(axis=1, initial=0.0) <= target) & (rows0 <= floor_[:end0]).all(axis=1)
        cost[ok, 0], backlog[ok, 0] = sizes[ok].astype(float) * end0, rows0[ok, -1]
        tail[ok, 0] = _tails(0.0, arr0, rows0[ok], caps[ok], np.zeros(int(ok.sum())), ckpt)
    else:
        matches = np.flatnonzero(sizes == start.scaleout)
        if len(matches) != 1:
            raise ValueError(f"start scale-out {start.scaleout} is not one of the schedule's scale-outs")
        i0 = int(matches[0])
        # worked off by the deadline: caught up from its last second on, like a recovery at the deadline
        deadline = max(0.0, float(start.catch_up_by_s) - 1.0) if start.catch_up_by_s > 0 else 0.0
        cost[i0, 0], backlog[i0, 0], recovered[i0, 0] = 0.0, float(start.backlog_records), deadline
    if not np.isfinite(cost).any():
        raise ScheduleInfeasible(0, int(sizes[-1]))

    for k in range(first, segments):
        t0, t1 = k * interval, min((k + 1) * interval, total)
        seg = t1 - t0
        arr = w[t0:t1]
        new_cost = np.full((nsz, levels), inf)
        new_state = np.zeros((5, nsz, levels))  # backlog, tail, recovered, gate, restart
        h1 = min(total, t0 + horizon)
        arr_h = w[t0:h1]
        secs = np.arange(t0, h1)
        for i, b in zip(*np.nonzero(np.isfinite(cost)), strict=True):
            c_prev, b_prev = cost[i, b], backlog[i, b]
            # hold scale-out i
            cap_row = np.where(np.arange(t0, t1) < restart[i, b], 0.0, caps[i])
            lag = lindley(b_prev, arr, cap_row)
            wait = np.maximum(restart[i, b] - np.arange(t0, t1), 0.0)
            behind = (lag > floor_[t0:t1]) & (np.arange(t0, t1) >= recovered[i, b])
            down_left = int(max(0.0, restart[i, b] - t0))
            if float((base + wait + lag / caps[i]).max()) <= target and not behind.any():
                c = c_prev + float(sizes[i]) * seg
                if c < new_cost[i, b] or (c == new_cost[i, b] and lag[-1] < new_state[0, i, b]):
                    new_cost[i, b] = c
                    tail_i = _tails(b_prev, arr, lag[None, :], caps[i : i + 1], np.array([down_left]), ckpt)[0]
                    new_state[:, i, b] = (lag[-1], tail_i, recovered[i, b], gate[i, b], restart[i, b])
                    parents[k, i, b] = i
            # rescale i -> j, only once the previous rescale has recovered and while the budget allows
            nb = b + spent
            if gate[i, b] > t0 or restart[i, b] > t0 or nb >= levels:
                continue
            others = np.flatnonzero(np.arange(nsz) != i)
            up = sizes[others] > sizes[i]
            stop_from = np.where(up, out_from, in_from)[:, None]
            downs = np.where(up, out_to, in_to)
            offset = secs[None, :] - t0
            cap_m = np.where(offset < stop_from, caps[i], np.where(offset < downs[:, None], 0.0, caps[others][:, None]))
            lags = lindley(b_prev + tail[i, b], arr_h, cap_m)
            waits = np.where(offset >= stop_from, np.maximum(downs[:, None] - offset, 0), 0)
            lat = base + waits + lags / caps[others][:, None]
            caught = (lags <= floor_[t0:h1][None, :]) & (offset >= downs[:, None])
            any_hit = caught.any(axis=1)
            hit = np.argmax(caught, axis=1)
            rec_at = np.where(any_hit, t0 + hit + 1, total + 1)
            # once recovered, the lag must stay caught up for the rest of the interval
            behind = ~caught[:, :seg] & (secs[None, :seg] >= rec_at[:, None])
            ok_lat = (lat[:, :seg].max(axis=1) <= target) & ~behind.any(axis=1)
            # A recovery still under way where the load ends is refused, else a schedule would drop executors in
            # the last `target` seconds for free.
            ok_rec = any_hit & (hit + 1 <= target)
            if recovered[i, b] > t0:  # still working off the start's backlog: a rescale does not move its deadline
                ok_rec &= rec_at <= recovered[i, b] + 1
            # every feasible target at once (each appears once for this state)
            rows = np.flatnonzero(ok_lat & ok_rec)
            js = others[rows]
            c = c_prev + sizes[js].astype(float) * seg
            end = lags[rows, seg - 1]
            better = (c < new_cost[js, nb]) | ((c == new_cost[js, nb]) & (end < new_state[0, js, nb]))
            rows, js, c, end = rows[better], js[better], c[better], end[better]
            if len(rows) == 0:
                continue
            new_cost[js, nb] = c
            new_state[0, js, nb] = end
            new_state[1, js, nb] = _tails(b_prev + tail[i, b], arr, lags[rows, :seg], caps[js], downs[rows], ckpt)
            new_state[2, js, nb] = rec_at[rows]
            new_state[3, js, nb] = rec_at[rows]
            new_state[4, js, nb] = t0 + downs[rows]
            parents[k, js, nb] = i
        if not np.isfinite(new_cost).any():
            raise ScheduleInfeasible(t0, int(sizes[-1]))
        cost = new_cost
        backlog, tail, recovered, gate, restart = new_state

    last, b = (int(x) for x in np.unravel_index(int(np.argmin(cost)), cost.shape))
    best = float(cost[last, b])
    path = [last]
    for k in range(segments - 1, first - 1, -1):
        i = int(parents[k, path[-1], b])
        if i != path[-1]:
            b -= spent
        path.append(i)
    if start is not None:
        path.pop()  # the start: the state before the first decision
    path.reverse()
    return Schedule(interval, tuple(int(sizes[j]) for j in path), best)
