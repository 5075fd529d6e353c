"""Unit tests: the offline optimum's lower bound (plan/bound.py) against brute force over every schedule of tiny
problems, and the closed form of a path's backlog that it asks its questions of."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from daedalus_spark.plan.bound import _Profiles, lowest_cost
from daedalus_spark.plan.schedule import QueueModel, ScheduleInfeasible, Stop, lindley

SIZES = (1, 2, 3)
CAPS = (10.0, 19.0, 27.0)
INTERVAL = 10
TARGET_S = 25.0
OBJECTIVE_S = 2.0
OUT, IN = Stop(0, 3), Stop(0, 2)


def _model() -> QueueModel:
    return QueueModel(
        scaleouts=SIZES,
        capacity_per_s=CAPS,
        target_recovery_s=TARGET_S,
        scale_out_stop=OUT,
        scale_in_stop=IN,
        target_latency_s=OBJECTIVE_S,
    )


def _passes(arrivals: np.ndarray, schedule: tuple[int, ...], *, in_order: bool, by_age: bool) -> bool:
    """The rule on the fluid queue, second by second, over every way the recoveries may end: each rescale's recovery
    ends at a caught-up second after its stop, before its request + the target, or runs on past it; outside a
    recovery every second is caught up. `in_order`: the recoveries whose stop is over end together (the judge ends
    each at the first second that holds); else any of the oldest may end alone (more lenient than the bound).
    Caught up: the backlog within the objective's seconds of capacity, or `by_age`, within the records of the last
    OBJECTIVE_S seconds (the oldest no older than that; its recovery then ends that much later)."""
    cap = np.empty(len(arrivals))
    floor = np.empty(len(arrivals))
    starts: dict[int, int] = {}
    target_s = TARGET_S + (OBJECTIVE_S if by_age else 0.0)
    for k, j in enumerate(schedule):
        t0 = k * INTERVAL
        cap[t0 : t0 + INTERVAL], floor[t0 : t0 + INTERVAL] = CAPS[j], OBJECTIVE_S * CAPS[j]
        if k > 0 and j != schedule[k - 1]:
            stop = OUT if j > schedule[k - 1] else IN
            cap[t0 : t0 + stop.start_s] = CAPS[schedule[k - 1]]
            cap[t0 + stop.start_s : t0 + stop.end_s] = 0.0
            starts[t0] = t0 + stop.end_s
    if by_age:
        arrived = np.concatenate(([0.0], np.cumsum(arrivals)))
        floor = np.array([arrived[t + 1] - arrived[max(0, t + 1 - int(OBJECTIVE_S))] for t in range(len(arrivals))])
    under = lindley(0.0, arrivals, cap[None, :])[0] <= floor
    states: set[tuple[tuple[int, int], ...]] = {()}
    for t in range(len(arrivals)):
        if t in starts:
            states = {(*s, (t, starts[t])) for s in states}
        after: set[tuple[tuple[int, int], ...]] = set()
        for s in states:
            over = sum(1 for _, effect in s if effect <= t) if under[t] else 0
            for rest in [s[over:]] + ([] if in_order else [s[m:] for m in range(1, over)]) + [s]:
                if (rest or under[t]) and all(t + 1 < request + target_s for request, _ in rest):
                    after.add(rest)
        states = after
    return () in states


def _cheapest(arrivals: np.ndarray, *, in_order: bool, max_rescales: int | None, by_age: bool = False) -> float:
    best = math.inf
    for schedule in itertools.product(range(len(SIZES)), repeat=len(arrivals) // INTERVAL):
        if max_rescales is not None and sum(a != b for a, b in itertools.pairwise(schedule)) > max_rescales:
            continue
        cost = float(sum(SIZES[j] for j in schedule) * INTERVAL)
        if cost < best and _passes(arrivals, schedule, in_order=in_order, by_age=by_age):
            best = cost
    return best


@pytest.mark.parametrize("by_age", [False, True], ids=["drain-time", "age"])
@pytest.mark.parametrize("max_rescales", [None, 2, 0], ids=["unlimited", "two-rescales", "none"])
@pytest.mark.parametrize("seed", range(12))
def test_the_bound_lies_between_the_rule_and_a_more_lenient_one(
    seed: int, max_rescales: int | None, by_age: bool
) -> None:
    rng = np.random.default_rng(seed)
    arrivals = np.repeat(rng.uniform(4.0, 30.0, 6), INTERVAL) * rng.uniform(0.8, 1.2, 6 * INTERVAL)
    rule = _cheapest(arrivals, in_order=True, max_rescales=max_rescales, by_age=by_age)
    lenient = _cheapest(arrivals, in_order=False, max_rescales=max_rescales, by_age=by_age)
    try:
        bound = lowest_cost(
            arrivals, _model(), interval_s=INTERVAL, max_rescales=max_rescales, latency_by_age=by_age
        ).executor_seconds
    except ScheduleInfeasible:
        bound = math.inf
    assert lenient <= bound <= rule


def test_the_draws_include_round_trips_that_only_the_rule_of_recoveries_allows() -> None:
    # the cases above are not all statics: on some draws the cheapest passing schedule scales in into an overload
    found = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        arrivals = np.repeat(rng.uniform(4.0, 30.0, 6), INTERVAL) * rng.uniform(0.8, 1.2, 6 * INTERVAL)
        found += _cheapest(arrivals, in_order=True, max_rescales=None) < _cheapest(
            arrivals, in_order=True, max_rescales=0
        )
    assert found >= 3


@pytest.mark.parametrize("seed", range(5))
def test_a_paths_backlog_and_its_caught_up_seconds_in_closed_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrivals = rng.uniform(0.0, 40.0, 30)
    capacity = np.where(np.arange(30)[None, :] < rng.integers(0, 10, (4, 1)), 0.0, rng.uniform(5.0, 40.0, (4, 1)))
    floor = rng.uniform(0.0, 60.0, (4, 30))
    from_s = rng.integers(0, 30, 4)
    prof = _Profiles.of(arrivals, capacity, floor, from_s)
    for b0 in (0.0, 5.0, 50.0, 500.0):
        lag = lindley(b0, arrivals, capacity)
        assert prof.end_backlog(np.arange(4), np.full(4, b0)) == pytest.approx(lag[:, -1])
        caught = lag <= floor
        for row in range(4):
            for tau in range(31):
                counted = caught[row, from_s[row] : tau] if tau > from_s[row] else caught[row, :0]
                assert (b0 <= prof.before[row, tau]) == bool(counted.any())
                if tau < 30:
                    assert (b0 <= prof.after[row, tau]) == bool(caught[row, tau:].all())
