"""Plan: the cheapest schedule of scale-outs over a known load that keeps every second's latency and every recovery
within the target — dynamic programming over the loop's decision points, for the horizon planner (over the
forecast).

The job, as the schedule sees it (a fluid queue):
- scale-out n processes up to `capacity_per_s[n]` records a second; the backlog follows the Lindley recursion
  b(t) = max(0, b(t-1) + arrivals(t) - capacity(t));
- a rescale requested at t gives the old capacity until t + stop.start_s, none until t + stop.end_s (the downtime),
  then for stop.warm_s seconds the old capacity plus stop.warm_ratio of what the rescale adds (joining executors
  warming up), then the new capacity, and adds the records processed in the last `replay_s` seconds to the backlog
  (replay from the checkpoint);
- constraints: latency (base + the downtime left + backlog / capacity) within the target at every second; outside a
  recovery the backlog stays within `caught_up_records` of that second; a rescale recovers (the backlog back within
  that bound) within the target, and the next rescale waits for it; optionally at most `max_rescales` rescales;
- objective: executor-seconds.

Under the user's latency objective (`QueueModel.target_latency_s`, the acceptance rule of sim/metrics.py) a second is
caught up when its latency (base + backlog / capacity) is within the objective, that is required outside a recovery,
and a recovery may take any latency until it ends (within the recovery target).

Approximation: the state is (decision index, scale-out[, rescales so far]). The backlog, the records to replay and
the times of the last recovery are carried from the cheapest path into each state (ties: the smaller backlog), not
enumerated; a dearer path that arrives with less backlog is dropped, so the result is an upper bound on the true
optimum of this model. The offline optimum's lower bound over the same queue is plan/bound.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.analyze.recovery_prediction import warm_capacity_per_s

# A problem this small (scale-outs x seconds a rescale is followed; the horizon planner's is ~100 cells) runs as plain
# Python floats, second by second: numpy costs a microsecond or more a call whatever the size, and its ~70 calls a
# state made the planner the largest part of a controller tick. A larger one (12 scale-outs x 601 s) stays vectorized.
# Both give the same bits (tests/unit/test_schedule_paths.py); plain floats only where no NaN, no infinity and no
# division by zero can arise.
_SMALL_CELLS = 512
_SMALL_MAGNITUDE = 1e100  # inputs bounded by this cannot overflow into an infinity (and from there into a NaN)


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
    """Seconds after a rescale's request: the old capacity before `start_s`, none until `end_s`, then for `warm_s`
    seconds the old capacity plus `warm_ratio` of the difference (executors that join run slower while they warm up),
    then the new one."""

    start_s: int
    end_s: int
    warm_s: int = 0
    warm_ratio: float = 1.0


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
    # The user's latency objective: caught up = latency within it; none: the backlog within `caught_up_records` and
    # every second's latency within the recovery target.
    target_latency_s: float | None = None


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
    carry_last: bool = False,
) -> Schedule:
    """The DP over (decision point, scale-out[, rescales made]). Without `start` the first interval's scale-out is
    free and the backlog empty (the offline optimum); with it the job starts there and the first interval is already
    a decision (hold or rescale at second 0). With `carry_last` the schedule ends at a scale-out that carries the
    last second's load where one can be reached: a load known only this far goes on beyond it (a plan over a
    forecast), and one that ends in an overload leaves the next plan a backlog that no scale-out works off in time.
    Raises ScheduleInfeasible when nothing meets the constraints."""
    p = _Problem.of(arrivals, model, interval_s, caught_up_records, max_rescales, start)
    states, first = _first_states(p, start)
    segments = max(1, math.ceil(p.total / p.interval))
    parents = np.full((segments, p.nsz, p.levels), -1, dtype=np.int64)  # the previous interval's scale-out index
    for k in range(first, segments):
        states = _advance(p, states, _Segment.of(p, k), parents[k])
    return _backtrack(p, states, parents, first, started=start is not None, carry_last=carry_last)


@dataclass(frozen=True)
class _Problem:
    """The DP's constants: the load, the scale-outs and their capacities, the stops, the target."""

    w: np.ndarray  # arrivals per second
    total: int
    interval: int
    target: float
    base: float
    sizes: np.ndarray
    caps: np.ndarray
    out_from: int
    out_to: int
    in_from: int
    in_to: int
    out_warm: int
    out_ratio: float
    in_warm: int
    in_ratio: float
    ckpt: int
    horizon: int  # seconds a rescale's recovery is followed
    floor: np.ndarray  # caught up: the backlog within this, per second...
    floor_by_size: np.ndarray  # ...or within this at each scale-out (the latency objective's backlog; 0: none)
    floor_per_capacity: float  # that bound per record/s of capacity (for a capacity still warming up)
    lat_cap: float  # every second's latency within this (infinite under the latency objective: it binds elsewhere)
    # Column b of every state array: paths that have rescaled b times (one column when rescales are not limited).
    levels: int
    spent: int  # columns a rescale moves to the right
    # The arrivals, capacities, floors and sizes as Python lists when the problem is small (see _SMALL_CELLS).
    small: tuple[list[float], list[float], list[float], list[int]] | None

    @classmethod
    def of(
        cls,
        arrivals: np.ndarray,
        model: QueueModel,
        interval_s: int,
        caught_up_records: np.ndarray,
        max_rescales: int | None,
        start: Start | None = None,
    ) -> _Problem:
        w = np.asarray(arrivals, dtype=float)
        interval = max(1, int(interval_s))
        target = float(model.target_recovery_s)
        horizon = max(math.ceil(target) + 1, interval)
        caps = np.asarray(model.capacity_per_s, dtype=float)
        floor = np.asarray(caught_up_records, dtype=float)
        backlog0 = 0.0 if start is None else float(start.backlog_records)
        values = np.concatenate([w, caps, floor, [backlog0, model.base_latency_s]])
        objective = model.target_latency_s
        small = (
            len(caps) * horizon <= _SMALL_CELLS
            and bool(np.all(np.abs(values) <= _SMALL_MAGNITUDE))  # False for NaN too
            and bool(np.all(caps > 0))
        )
        return cls(
            w=w,
            total=len(w),
            interval=interval,
            target=target,
            base=model.base_latency_s,
            sizes=np.asarray(model.scaleouts),
            caps=caps,
            out_from=model.scale_out_stop.start_s,
            out_to=model.scale_out_stop.end_s,
            in_from=model.scale_in_stop.start_s,
            in_to=model.scale_in_stop.end_s,
            out_warm=model.scale_out_stop.warm_s,
            out_ratio=float(model.scale_out_stop.warm_ratio),
            in_warm=model.scale_in_stop.warm_s,
            in_ratio=float(model.scale_in_stop.warm_ratio),
            ckpt=model.replay_s,
            horizon=horizon,
            floor=floor,
            floor_by_size=np.zeros(len(caps)) if objective is None else (objective - model.base_latency_s) * caps,
            floor_per_capacity=0.0 if objective is None else objective - model.base_latency_s,
            lat_cap=target if objective is None else math.inf,
            levels=1 if max_rescales is None else max(0, max_rescales) + 1,
            spent=0 if max_rescales is None else 1,
            small=(w.tolist(), caps.tolist(), floor.tolist(), [int(n) for n in model.scaleouts]) if small else None,
        )

    @property
    def nsz(self) -> int:
        return len(self.sizes)


@dataclass
class _States:
    """Per (scale-out index, rescales column): the cheapest path's cost, and what it carries into the state."""

    cost: np.ndarray
    backlog: np.ndarray
    tail: np.ndarray  # records processed in the last `ckpt` seconds: the replay of a rescale now
    recovered: np.ndarray  # second by which the backlog has been worked off (no "behind" before)
    gate: np.ndarray  # second from which the next rescale may start (the last one has recovered)
    restart: np.ndarray  # second processing (re)starts after the last rescale
    warm_end: np.ndarray  # second the last rescale's executors are warm (full capacity from then on)
    warm_cap: np.ndarray  # capacity until then (from `restart` on)

    @classmethod
    def empty(cls, p: _Problem) -> _States:
        block = np.zeros((8, p.nsz, p.levels))  # one allocation: the DP makes one per decision point
        block[0] = math.inf
        return cls(*block)


@dataclass(frozen=True)
class _Warm:
    """A rescale's warm-up, in seconds after its request: the capacity is `cap` until `end`."""

    end: int
    cap: float


@dataclass(frozen=True)
class _Segment:
    """Decision interval k: its seconds [t0, t1), and the seconds [t0, h1) a rescale at t0 is followed over."""

    t0: int
    t1: int
    h1: int
    arr: np.ndarray
    arr_h: np.ndarray
    secs: np.ndarray

    @classmethod
    def of(cls, p: _Problem, k: int) -> _Segment:
        t0, t1 = k * p.interval, min((k + 1) * p.interval, p.total)
        h1 = min(p.total, t0 + p.horizon)
        return cls(t0, t1, h1, p.w[t0:t1], p.w[t0:h1], np.arange(t0, h1))

    @property
    def seg(self) -> int:
        return self.t1 - self.t0


def _first_states(p: _Problem, start: Start | None) -> tuple[_States, int]:
    """The states before the first interval the loop decides, and that interval's index."""
    s = _States.empty(p)
    first = 0
    if start is None:  # first interval: any scale-out, processing from t=0 with an empty backlog
        first = 1
        end0 = min(p.interval, p.total)
        arr0 = p.w[:end0]
        rows0 = lindley(0.0, arr0, np.repeat(p.caps[:, None], end0, axis=1))
        lat0 = p.base + rows0 / p.caps[:, None]
        ok = (lat0.max(axis=1, initial=0.0) <= p.lat_cap) & (
            rows0 <= _floors(p, 0, end0, p.floor_by_size[:, None])
        ).all(axis=1)
        s.cost[ok, 0], s.backlog[ok, 0] = p.sizes[ok].astype(float) * end0, rows0[ok, -1]
        s.tail[ok, 0] = _tails(0.0, arr0, rows0[ok], p.caps[ok], np.zeros(int(ok.sum())), p.ckpt)
    else:
        matches = np.flatnonzero(p.sizes == start.scaleout)
        if len(matches) != 1:
            raise ValueError(f"start scale-out {start.scaleout} is not one of the schedule's scale-outs")
        i0 = int(matches[0])
        # worked off by the deadline: caught up from its last second on, like a recovery at the deadline
        deadline = max(0.0, float(start.catch_up_by_s) - 1.0) if start.catch_up_by_s > 0 else 0.0
        s.cost[i0, 0], s.backlog[i0, 0], s.recovered[i0, 0] = 0.0, float(start.backlog_records), deadline
    if not np.isfinite(s.cost).any():
        raise ScheduleInfeasible(0, int(p.sizes[-1]))
    return s, first


def _advance(p: _Problem, s: _States, g: _Segment, parents: np.ndarray) -> _States:
    """The states after interval `g`: from every reachable state, hold or rescale; `parents` records the way in."""
    new = _States.empty(p)
    hold, rescale = (_hold, _rescale) if p.small is None else (_hold_small, _rescale_small)
    for i, b in zip(*np.nonzero(np.isfinite(s.cost)), strict=True):
        hold(p, s, new, g, parents, int(i), int(b))
        rescale(p, s, new, g, parents, int(i), int(b))
    if not np.isfinite(new.cost).any():
        raise ScheduleInfeasible(g.t0, int(p.sizes[-1]))
    return new


def _hold(p: _Problem, s: _States, new: _States, g: _Segment, parents: np.ndarray, i: int, b: int) -> None:
    """Hold scale-out i over the interval, if latency stays within the target and the backlog caught up."""
    b_prev, restart = s.backlog[i, b], s.restart[i, b]
    seconds = np.arange(g.t0, g.t1)
    warming = seconds < s.warm_end[i, b]
    cap = np.where(seconds < restart, 0.0, np.where(warming, s.warm_cap[i, b], p.caps[i]))
    lag = lindley(b_prev, g.arr, cap)
    wait = np.maximum(restart - seconds, 0.0)
    floor_i = np.where(warming, p.floor_per_capacity * s.warm_cap[i, b], p.floor_by_size[i])
    behind = (lag > _floors(p, g.t0, g.t1, floor_i)) & (seconds >= s.recovered[i, b])
    down_left = int(max(0.0, restart - g.t0))
    if not (float((p.base + wait + lag / p.caps[i]).max()) <= p.lat_cap and not behind.any()):
        return
    c = s.cost[i, b] + float(p.sizes[i]) * g.seg
    if c < new.cost[i, b] or (c == new.cost[i, b] and lag[-1] < new.backlog[i, b]):
        new.cost[i, b] = c
        new.backlog[i, b] = lag[-1]
        new.tail[i, b] = _tails(b_prev, g.arr, lag[None, :], p.caps[i : i + 1], np.array([down_left]), p.ckpt)[0]
        new.recovered[i, b], new.gate[i, b], new.restart[i, b] = s.recovered[i, b], s.gate[i, b], restart
        new.warm_end[i, b], new.warm_cap[i, b] = s.warm_end[i, b], s.warm_cap[i, b]
        parents[i, b] = i


def _rescale(p: _Problem, s: _States, new: _States, g: _Segment, parents: np.ndarray, i: int, b: int) -> None:
    """Rescale i -> every other scale-out at the interval's start, only once the previous rescale has recovered and
    while the budget allows; each target that keeps latency and recovers within the target."""
    nb = b + p.spent
    if s.gate[i, b] > g.t0 or s.restart[i, b] > g.t0 or nb >= p.levels:
        return
    backlog = s.backlog[i, b] + s.tail[i, b]
    others = np.flatnonzero(np.arange(p.nsz) != i)
    up = p.sizes[others] > p.sizes[i]
    stop_from = np.where(up, p.out_from, p.in_from)[:, None]
    downs = np.where(up, p.out_to, p.in_to)
    warm_ends = downs + np.where(up, p.out_warm, p.in_warm)
    warm_caps = warm_capacity_per_s(p.caps[i], p.caps[others], np.where(up, p.out_ratio, p.in_ratio))
    offset = g.secs[None, :] - g.t0
    warming = offset < warm_ends[:, None]
    new_cap = np.where(warming, warm_caps[:, None], p.caps[others][:, None])
    cap_m = np.where(offset < stop_from, p.caps[i], np.where(offset < downs[:, None], 0.0, new_cap))
    lags = lindley(backlog, g.arr_h, cap_m)
    waits = np.where(offset >= stop_from, np.maximum(downs[:, None] - offset, 0), 0)
    lat = p.base + waits + lags / p.caps[others][:, None]
    floor_m = np.where(warming, p.floor_per_capacity * warm_caps[:, None], p.floor_by_size[others][:, None])
    caught = (lags <= _floors(p, g.t0, g.h1, floor_m)) & (offset >= downs[:, None])
    any_hit, hit = np.asarray(caught.any(axis=1)), np.argmax(caught, axis=1)
    rec_at = np.where(any_hit, g.t0 + hit + 1, p.total + 1)
    # once recovered, the lag must stay caught up for the rest of the interval
    behind = ~caught[:, : g.seg] & (g.secs[None, : g.seg] >= rec_at[:, None])
    ok_lat = (lat[:, : g.seg].max(axis=1) <= p.lat_cap) & ~behind.any(axis=1)
    # A recovery still under way where the load ends is refused, else a schedule would drop executors in the last
    # `target` seconds for free.
    ok_rec = any_hit & (hit + 1 <= p.target)
    if s.recovered[i, b] > g.t0:  # still working off the start's backlog: its deadline stays
        ok_rec &= rec_at <= s.recovered[i, b] + 1
    # every feasible target at once (each appears once for this state)
    rows = np.flatnonzero(ok_lat & ok_rec)
    js = others[rows]
    c = s.cost[i, b] + p.sizes[js].astype(float) * g.seg
    end = lags[rows, g.seg - 1]
    better = (c < new.cost[js, nb]) | ((c == new.cost[js, nb]) & (end < new.backlog[js, nb]))
    rows, js, c, end = rows[better], js[better], c[better], end[better]
    if len(rows) == 0:
        return
    new.cost[js, nb] = c
    new.backlog[js, nb] = end
    new.tail[js, nb] = _tails(backlog, g.arr, lags[rows, : g.seg], p.caps[js], downs[rows], p.ckpt)
    new.recovered[js, nb] = rec_at[rows]
    new.gate[js, nb] = rec_at[rows]
    new.restart[js, nb] = g.t0 + downs[rows]
    new.warm_end[js, nb] = g.t0 + warm_ends[rows]
    new.warm_cap[js, nb] = warm_caps[rows]
    parents[js, nb] = i


def _floors(p: _Problem, t0: int, t1: int, by_size: np.ndarray | float) -> np.ndarray:
    """The caught-up bound of seconds [t0, t1): the per-second floor or the latency objective's, whichever is larger
    (`by_size` broadcasts against the seconds: a scalar, or a column of scale-outs)."""
    return np.asarray(np.maximum(p.floor[t0:t1], by_size), dtype=float)


# The small problems' path (see _SMALL_CELLS): the same states and the same floating-point operations in the same
# order as the vectorized one, second by second. numpy's choices are kept where they matter to a bit: `lindley`'s
# prefix sum and running minimum (not the recursion max(0, b + a - c), which rounds differently), np.minimum /
# np.maximum returning their second operand between equal values (0.0 and -0.0), and a tail's sum added pairwise as
# np.sum does.


def _hold_small(p: _Problem, s: _States, new: _States, g: _Segment, parents: np.ndarray, i: int, b: int) -> None:
    """`_hold` second by second."""
    assert p.small is not None
    c = s.cost[i, b] + float(p.small[3][i]) * g.seg
    if c > new.cost[i, b]:
        return  # a cheaper path holds the state already, whatever this one would find
    w, caps, floor, _ = p.small
    b_prev, restart, recovered = float(s.backlog[i, b]), float(s.restart[i, b]), float(s.recovered[i, b])
    cap, base, target, floor0 = caps[i], p.base, p.lat_cap, -b_prev
    floor_full = float(p.floor_by_size[i])
    warm_end, warm_cap = float(s.warm_end[i, b]), float(s.warm_cap[i, b])
    floor_warm = p.floor_per_capacity * warm_cap
    lags: list[float] = []
    total, low = 0.0, math.inf
    for t in range(g.t0, g.t1):
        warming = t < warm_end
        floor_i = floor_warm if warming else floor_full
        # lindley's arithmetic: prefix sum, running minimum, backlog (inlined: this loop is the tick's hot spot)
        net = w[t] - (0.0 if t < restart else (warm_cap if warming else cap))
        total = net if t == g.t0 else total + net
        low = low if low < total else total
        lag = total - (low if low < floor0 else floor0)
        lag = lag if lag > 0.0 else 0.0
        lags.append(lag)
        wait = restart - t
        wait = wait if wait > 0.0 else 0.0
        if not base + wait + lag / cap <= target or (lag > floor[t] and lag > floor_i and t >= recovered):
            return
    if c < new.cost[i, b] or (c == new.cost[i, b] and lags[-1] < new.backlog[i, b]):
        down_left = int(max(0.0, restart - g.t0))
        new.cost[i, b] = c
        new.backlog[i, b] = lags[-1]
        new.tail[i, b] = _tail_small(b_prev, w[g.t0 : g.t1], lags, cap, down_left, p.ckpt)
        new.recovered[i, b], new.gate[i, b], new.restart[i, b] = s.recovered[i, b], s.gate[i, b], restart
        new.warm_end[i, b], new.warm_cap[i, b] = warm_end, warm_cap
        parents[i, b] = i


def _rescale_small(p: _Problem, s: _States, new: _States, g: _Segment, parents: np.ndarray, i: int, b: int) -> None:
    """`_rescale` target by target, each followed only until its outcome is known."""
    assert p.small is not None
    nb = b + p.spent
    if s.gate[i, b] > g.t0 or s.restart[i, b] > g.t0 or nb >= p.levels:
        return
    w, caps, _, sizes = p.small
    backlog = float(s.backlog[i, b] + s.tail[i, b])
    deadline = s.recovered[i, b] + 1 if s.recovered[i, b] > g.t0 else math.inf
    for j in range(p.nsz):
        c = s.cost[i, b] + float(sizes[j]) * g.seg
        if j == i or c > new.cost[j, nb]:
            continue  # a cheaper path reaches the target already, whatever this rescale would find
        up = sizes[j] > sizes[i]
        stop_from, down = (p.out_from, p.out_to) if up else (p.in_from, p.in_to)
        warm = _Warm(
            down + (p.out_warm if up else p.in_warm),
            warm_capacity_per_s(caps[i], caps[j], p.out_ratio if up else p.in_ratio),
        )
        followed = _follow_rescale(p, g, backlog, (caps[i], caps[j]), float(p.floor_by_size[j]), stop_from, down, warm)
        if followed is None or not g.t0 + followed[0] + 1 <= deadline:
            continue
        rec_at, lags = g.t0 + followed[0] + 1, followed[1]
        end = lags[g.seg - 1]
        if c < new.cost[j, nb] or (c == new.cost[j, nb] and end < new.backlog[j, nb]):
            new.cost[j, nb] = c
            new.backlog[j, nb] = end
            new.tail[j, nb] = _tail_small(backlog, w[g.t0 : g.t1], lags, caps[j], down, p.ckpt)
            new.recovered[j, nb] = new.gate[j, nb] = rec_at
            new.restart[j, nb] = g.t0 + down
            new.warm_end[j, nb], new.warm_cap[j, nb] = g.t0 + warm.end, warm.cap
            parents[j, nb] = i


def _follow_rescale(
    p: _Problem,
    g: _Segment,
    backlog0: float,
    caps: tuple[float, float],
    floor_to: float,
    stop_from: int,
    down: int,
    warm: _Warm,
) -> tuple[int, list[float]] | None:
    """A rescale at the interval's start, second by second until its outcome is known: the offset of its first caught
    up second and the backlog after each second of the interval, or None when it breaks the target (latency, behind
    again after recovering, no recovery within the target)."""
    assert p.small is not None
    w, _, floor, _ = p.small
    cap_from, cap_to = caps
    t0, seg, base, target, floor0 = g.t0, g.t1 - g.t0, p.base, p.target, -backlog0
    floor_warm = p.floor_per_capacity * warm.cap
    lags: list[float] = []
    total, low = 0.0, math.inf
    hit = -1
    for k in range(g.h1 - t0):
        warming = k < warm.end
        # lindley's arithmetic: prefix sum, running minimum, backlog (inlined: this loop is the tick's hot spot)
        net = w[t0 + k] - (cap_from if k < stop_from else (0.0 if k < down else (warm.cap if warming else cap_to)))
        total = net if k == 0 else total + net
        low = low if low < total else total
        lag = total - (low if low < floor0 else floor0)
        lag = lag if lag > 0.0 else 0.0
        caught = (lag <= floor[t0 + k] or lag <= (floor_warm if warming else floor_to)) and k >= down
        if k < seg:
            lags.append(lag)
            wait = (down - k if down - k > 0 else 0) if k >= stop_from else 0
            if not base + wait + lag / cap_to <= p.lat_cap or (hit >= 0 and not caught):
                return None
        if hit < 0 and caught:
            hit = k
        if hit >= 0 and k >= seg - 1:
            return (hit, lags) if hit + 1 <= target else None
        if hit < 0 and not k + 2 <= target:  # the first caught-up second, k + 1 or later, comes too late
            return None
    return None


def _tail_small(backlog0: float, arrivals: list[float], lags: list[float], cap: float, down: int, ckpt: int) -> float:
    """`_tails` of one row."""
    if ckpt <= 0:
        return 0.0
    if ckpt > len(lags) - down:
        return cap * ckpt
    before = [backlog0, *lags[:-1]]
    processed = [before[k] + arrivals[k] - lags[k] for k in range(len(lags) - ckpt, len(lags))]
    return _pairwise_sum([v if v > 0.0 else 0.0 for v in processed])


def _pairwise_sum(values: list[float]) -> float:
    """np.sum of a float row, to the last bit: eight running sums combined pairwise, the rest added in order (numpy's
    pairwise summation; a row longer than its block of 128 is left to numpy)."""
    n = len(values)
    if n > 128:
        return float(np.sum(np.asarray(values, dtype=float)))
    if n < 8:
        total = 0.0
        for v in values:
            total += v
        return total
    r = values[:8]
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += values[i + j]
        i += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    for v in values[i:]:
        total += v
    return total


def _backtrack(
    p: _Problem, s: _States, parents: np.ndarray, first: int, *, started: bool, carry_last: bool
) -> Schedule:
    """The cheapest final state's path back through `parents`, as a schedule (with `carry_last`, of the final states
    whose scale-out carries the last second's load, where one is reachable)."""
    cost = s.cost
    if carry_last and p.total > 0:
        carrying = np.where((p.caps >= p.w[-1])[:, None], cost, math.inf)
        cost = carrying if np.isfinite(carrying).any() else cost
    last, b = (int(x) for x in np.unravel_index(int(np.argmin(cost)), cost.shape))
    best = float(cost[last, b])
    path = [last]
    for k in range(len(parents) - 1, first - 1, -1):
        i = int(parents[k, path[-1], b])
        if i != path[-1]:
            b -= p.spent
        path.append(i)
    if started:
        path.pop()  # the start: the state before the first decision
    path.reverse()
    return Schedule(p.interval, tuple(int(p.sizes[j]) for j in path), best)
