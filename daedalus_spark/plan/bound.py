"""Plan: a lower bound on the executor-seconds of any schedule of scale-outs at the loop's decision points that meets
the acceptance rule over a known load, by dynamic programming over paths (the offline optimum, sim/optimum.py).

The job is plan/schedule.py's fluid queue, without replay. The rule is the one sim/metrics.py judges by: latency
within the objective at every second outside a recovery, and every rescale recovered within the target of its
request. A recovery ends at the first caught-up second after the rescale has taken effect, whatever rescales came
between: a rescale during a recovery is allowed, and a scale-in into an overload that a later scale-out works off in
time passes.

A path's state at a decision point: its scale-out, the rescales it made (when they are limited), and how many
intervals ago the oldest recovery still under way was requested (slot 0: none; slot a while that one's deadline lies
ahead). Of the paths into a state only those that no other beats on both cost and backlog are extended (each with the
restart still ahead of it, if any), so the search is exact for this model but where it is lenient, on the cheap side:
- a recovery may end at any single caught-up second (the judge also wants latency to hold within the objective for as
  long again from there), or run on past it (the judge's may end later, at the first second that holds);
- the recoveries of earlier rescales may end at a caught-up second during a later rescale's stop.
So no schedule that meets the rule costs less; the cheapest path's schedule need not meet it itself.

Within an interval every path's backlog follows from its starting backlog b0 and the interval's capacity profile:
b(t) = max(M(t), b0 + D(t)), with D the running sum of arrivals minus capacity and M the backlog from an empty start.
Second t is caught up (backlog within the objective's) when M(t) <= F and b0 <= F - D(t), so every question the DP
asks of a path is one comparison of b0 against a running maximum or minimum of the profile's F - D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from daedalus_spark.plan.schedule import QueueModel, Schedule, ScheduleInfeasible, lindley


@dataclass(frozen=True)
class _Bound:
    """The DP's constants."""

    w: np.ndarray  # arrivals per second
    interval: int
    target: float
    sizes: np.ndarray
    caps: np.ndarray
    floors: np.ndarray  # caught up: the backlog within the latency objective's, per scale-out and second
    stops: tuple[tuple[int, int], tuple[int, int]]  # (from, to) of a scale-out's stop, and of a scale-in's
    levels: int  # rescales a path may make, plus one (one column when they are not limited)
    spent: int  # what a rescale spends of them (0 when they are not limited)

    @property
    def n(self) -> int:
        return len(self.sizes)

    def deadline(self, t0: int, slot: np.ndarray) -> np.ndarray:
        """The second before which the oldest recovery under way must end (inf for slot 0)."""
        return np.where(slot > 0, t0 - slot * self.interval + self.target, math.inf)


@dataclass(frozen=True)
class _Profiles:
    """Capacity profiles over one interval, one row each: the backlog from an empty start (M, at the interval's end),
    the running sum of arrivals minus capacity (D, at the end), and for each second t the slack F - D(t) of a caught-up
    second (-inf where M(t) > F): its running maximum before t (`before[:, t]`, over seconds from `from_s` on) and its
    minimum from t on (`after[:, t]`)."""

    end_m: np.ndarray
    end_d: np.ndarray
    before: np.ndarray
    after: np.ndarray

    @classmethod
    def of(cls, arrivals: np.ndarray, capacity: np.ndarray, floor: np.ndarray, from_s: np.ndarray) -> _Profiles:
        """`floor`: the caught-up backlog of each row's seconds."""
        m = lindley(0.0, arrivals, capacity)
        d = np.cumsum(arrivals - capacity, axis=1)
        slack = np.where(m <= floor, floor - d, -math.inf)
        counted = np.where(np.arange(slack.shape[1])[None, :] >= from_s[:, None], slack, -math.inf)
        first = np.full((len(slack), 1), -math.inf)
        before = np.concatenate([first, np.maximum.accumulate(counted, axis=1)], axis=1)
        after = np.minimum.accumulate(slack[:, ::-1], axis=1)[:, ::-1]
        return cls(m[:, -1], d[:, -1], before, after)

    def end_backlog(self, kind: np.ndarray, b0: np.ndarray) -> np.ndarray:
        """The backlog at the interval's end of paths on profiles `kind` that start it with `b0`."""
        return np.asarray(np.maximum(self.end_m[kind], self.end_d[kind] + b0))


@dataclass(frozen=True)
class _Paths:
    """Paths to a decision point, one row each: its scale-out (an index into the sizes), rescales made, age slot,
    cost (whole executor-seconds), backlog and restart, and the row of the path it extends (at the decision point
    before)."""

    size: np.ndarray
    spent: np.ndarray
    slot: np.ndarray
    cost: np.ndarray
    backlog: np.ndarray
    restart: np.ndarray
    parent: np.ndarray

    def take(self, rows: np.ndarray) -> _Paths:
        return _Paths(*(np.asarray(getattr(self, f.name))[rows] for f in fields(self)))

    @classmethod
    def concat(cls, parts: list[_Paths]) -> _Paths:
        return cls(*(np.concatenate([getattr(x, f.name) for x in parts]) for f in fields(cls)))


def lowest_cost(
    arrivals: np.ndarray,
    model: QueueModel,
    *,
    interval_s: int,
    max_rescales: int | None = None,
    latency_by_age: bool = False,
) -> Schedule:
    """The bound over the whole load: the first interval's scale-out free, the backlog empty at the start, every
    recovery over at the end. Raises ScheduleInfeasible when no schedule meets the rule.

    The latency the rule holds to the objective is, by default, the time to work the backlog off at the scale-out's
    capacity (plus the base latency). `latency_by_age`: the age of the oldest unread record instead, what a
    micro-batch job's records wait from arrival to commit. A backlog holds no record older than L seconds exactly
    when it is within the records that arrived in the last L seconds (first in, first out), and a record that
    arrived at s is read L seconds later: a recovery the rule ends at arrival second s is over for the backlog at
    s + L, so the recovery's deadline moves on by L."""
    p = _problem(arrivals, model, interval_s, max_rescales, latency_by_age)
    total = len(p.w)
    paths = _first(p)
    steps = [paths]
    for k in range(1, max(1, math.ceil(total / p.interval))):
        t0, t1 = k * p.interval, min((k + 1) * p.interval, total)
        paths = _front(_Paths.concat([_hold(p, paths, t0, t1), _rescale(p, paths, t0, t1)]), t1)
        if len(paths.cost) == 0:
            raise ScheduleInfeasible(t0, int(p.sizes[-1]))
        steps.append(paths)
    done = np.flatnonzero(paths.slot == 0)  # a recovery still under way where the load ends is refused
    if len(done) == 0:
        raise ScheduleInfeasible(total, int(p.sizes[-1]))
    row = int(done[np.argmin(paths.cost[done])])
    best = float(paths.cost[row])
    path = []
    for step in reversed(steps):
        path.append(int(p.sizes[step.size[row]]))
        row = int(step.parent[row])
    return Schedule(p.interval, tuple(reversed(path)), best)


def _problem(
    arrivals: np.ndarray,
    model: QueueModel,
    interval_s: int,
    max_rescales: int | None,
    latency_by_age: bool,
) -> _Bound:
    if model.target_latency_s is None or model.replay_s:
        raise ValueError("the bound judges by a latency objective and replays nothing")
    w = np.asarray(arrivals, dtype=float)
    caps = np.asarray(model.capacity_per_s, dtype=float)
    latency = model.target_latency_s - model.base_latency_s
    if latency_by_age:  # the records of the last `latency` seconds, whatever the scale-out
        arrived = np.concatenate(([0.0], np.cumsum(w)))
        seconds = np.arange(len(arrived), dtype=float)
        per_second = arrived[1:] - np.interp(seconds[1:] - latency, seconds, arrived)
    else:  # the objective's seconds of each scale-out's capacity, whatever the second
        per_second = (latency * caps)[:, None]
    floors = np.broadcast_to(per_second, (len(caps), len(w)))
    return _Bound(
        w=w,
        interval=max(1, int(interval_s)),
        target=float(model.target_recovery_s) + (latency if latency_by_age else 0.0),
        sizes=np.asarray(model.scaleouts, dtype=np.int64),
        caps=caps,
        floors=floors,
        stops=(
            (model.scale_out_stop.start_s, model.scale_out_stop.end_s),
            (model.scale_in_stop.start_s, model.scale_in_stop.end_s),
        ),
        levels=1 if max_rescales is None else max(0, max_rescales) + 1,
        spent=0 if max_rescales is None else 1,
    )


def _first(p: _Bound) -> _Paths:
    """The paths through the first interval: each scale-out that keeps up over it from an empty backlog."""
    end = min(p.interval, len(p.w))
    lag = lindley(0.0, p.w[:end], np.repeat(p.caps[:, None], end, axis=1))
    ok = np.flatnonzero((lag <= p.floors[:, :end]).all(axis=1))
    if len(ok) == 0:
        raise ScheduleInfeasible(0, int(p.sizes[-1]))
    none = np.zeros(len(ok), dtype=np.int64)
    return _Paths(ok, none, none, p.sizes[ok] * end, lag[ok, -1], none.astype(float), none - 1)


def _front(paths: _Paths, t1: int) -> _Paths:
    """The paths worth extending: per state (scale-out, rescales made, age slot, and a restart still ahead), those
    no other path beats on both cost and backlog."""
    if len(paths.cost) == 0:
        return paths
    ahead = np.unique(np.maximum(paths.restart, t1), return_inverse=True)[1]  # a restart over no longer matters
    state = ((paths.size * (paths.spent.max() + 1) + paths.spent) * (paths.slot.max() + 1) + paths.slot) * (
        ahead.max() + 1
    ) + ahead
    order = np.lexsort((paths.backlog, state * (paths.cost.max() + 1) + paths.cost))  # whole executor-seconds
    paths, state = paths.take(order), state[order]
    least_before = pd.Series(paths.backlog).groupby(state).cummin().groupby(state).shift(1).to_numpy()
    return paths.take(np.flatnonzero(np.isnan(least_before) | (paths.backlog < least_before)))


def _hold(p: _Bound, paths: _Paths, t0: int, t1: int) -> _Paths:
    """Each path holds its scale-out over the interval: without a recovery under way, only caught up throughout; with
    one, on to the next slot while its deadline lies after the interval, and to slot 0 where the interval ends in a
    caught-up run that starts (after the restart) before the deadline."""
    seg = t1 - t0
    down = np.clip(paths.restart - t0, 0, seg).astype(np.int64)  # no capacity before the restart
    kinds, kind = np.unique(paths.size * (seg + 1) + down, return_inverse=True)
    size_k, down_k = kinds // (seg + 1), kinds % (seg + 1)
    cap = np.where(np.arange(seg)[None, :] < down_k[:, None], 0.0, p.caps[size_k][:, None])
    prof = _Profiles.of(p.w[t0:t1], cap, p.floors[size_k, t0:t1], down_k)
    b0 = paths.backlog
    deadline = p.deadline(t0, paths.slot)
    last = np.minimum(seg, np.ceil(deadline - t0)) - 1  # the latest start of a run that ends the recovery in time
    last_i = np.clip(last, 0, seg - 1).astype(np.int64)
    ends_pending = (last >= down) & (b0 <= prof.after[kind, last_i])
    ends = np.where(paths.slot > 0, ends_pending, b0 <= prof.after[kind, 0])
    stay = (paths.slot > 0) & (deadline > t1)
    rows = np.concatenate([np.flatnonzero(stay), np.flatnonzero(ends)])
    return _Paths(
        size=paths.size[rows],
        spent=paths.spent[rows],
        slot=np.concatenate([paths.slot[stay] + 1, np.zeros(int(ends.sum()), dtype=np.int64)]),
        cost=paths.cost[rows] + p.sizes[paths.size[rows]] * seg,
        backlog=prof.end_backlog(kind, b0)[rows],
        restart=paths.restart[rows],
        parent=rows,
    )


def _rescale(p: _Bound, paths: _Paths, t0: int, t1: int) -> _Paths:
    """Each path whose restart is over rescales to every other scale-out at the interval's start, while the budget
    allows. The recoveries under way may end at any caught-up second before their deadline, else they stay the
    oldest; the new one's ends where the interval ends in a caught-up run after its stop, else it is under way (slot
    1, or the older one's slot on)."""
    seg = t1 - t0
    src = np.flatnonzero((paths.restart <= t0) & (paths.spent + p.spent < p.levels))
    rr, js = np.repeat(src, p.n), np.tile(np.arange(p.n), len(src))
    pick = js != paths.size[rr]
    rr, js = rr[pick], js[pick]
    # one profile per (from, to): the old capacity until the stop, none during it, then the new one
    pi, pj = np.divmod(np.arange(p.n * p.n), p.n)
    (out_from, out_to), (in_from, in_to) = p.stops
    up = p.sizes[pj] > p.sizes[pi]
    stop_from, downs = np.where(up, out_from, in_from), np.where(up, out_to, in_to)
    offset = np.arange(seg)[None, :]
    cap = np.where(
        offset < stop_from[:, None], p.caps[pi][:, None], np.where(offset < downs[:, None], 0.0, p.caps[pj][:, None])
    )
    any_second = _Profiles.of(p.w[t0:t1], cap, p.floors[pj, t0:t1], np.zeros(len(pj), dtype=np.int64))
    kind = paths.size[rr] * p.n + js
    b0, age = paths.backlog[rr], paths.slot[rr]
    older = p.deadline(t0, age)
    before_older = np.clip(older - t0, 0, seg).astype(np.int64)
    older_end = (age == 0) | (b0 <= any_second.before[kind, before_older])
    last = min(seg, math.ceil(p.target)) - 1  # the latest start of a run that ends the new recovery in time
    ends = older_end & (last >= downs[kind]) & (b0 <= any_second.after[kind, last])
    pending = np.where(older_end, t0 + p.target > t1, older > t1)
    rows = np.concatenate([np.flatnonzero(pending), np.flatnonzero(ends)])
    return _Paths(
        size=js[rows],
        spent=paths.spent[rr[rows]] + p.spent,
        slot=np.concatenate([np.where(older_end, 1, age + 1)[pending], np.zeros(int(ends.sum()), dtype=np.int64)]),
        cost=paths.cost[rr[rows]] + p.sizes[js[rows]] * seg,
        backlog=any_second.end_backlog(kind, b0)[rows],
        restart=(t0 + downs[kind]).astype(float)[rows],
        parent=rr[rows],
    )
