"""The schedule DP's two paths agree to the last bit: plain floats for a small problem (the horizon planner's), numpy
for a large one (the offline optimum's), on random problems made to hit ties, exact zeros and -0.0."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
import pytest

from daedalus_spark.plan import schedule
from daedalus_spark.plan.schedule import QueueModel, ScheduleInfeasible, Start, Stop


def _random_problem(seed: int) -> tuple[schedule._Problem, Start | None]:
    rng = random.Random(seed)
    sizes = sorted(rng.sample(range(1, 13), rng.randint(2, 5)))
    exact = rng.random() < 0.5  # whole numbers: lags of exactly 0, equal costs and backlogs (the ties)
    per_executor = rng.choice([10.0, 37.5, 1000.0])
    caps = [n * per_executor * (1.0 if exact else rng.uniform(0.8, 1.2)) for n in sizes]
    total = rng.randint(12, 90)
    level = rng.uniform(0.2, 1.1) * caps[-1]
    arrivals = [max(0.0, level * rng.uniform(0.3, 1.3)) for _ in range(total)]
    if exact:
        arrivals = [float(round(a / per_executor)) * per_executor for a in arrivals]
    for t in rng.sample(range(total), rng.randint(0, 3)):
        arrivals[t] = rng.choice([0.0, -0.0, caps[-1] * 3])  # idle seconds, a negative zero, a spike
    stop_out = rng.randint(0, 2)
    stop_in = rng.randint(0, 2)
    model = QueueModel(
        scaleouts=tuple(sizes),
        capacity_per_s=tuple(caps),
        target_recovery_s=rng.choice([3.0, 7.5, 12.0, 30.0]),
        # a warm-up after half the scale-outs (and a few scale-ins): the capacity between the old and the new
        scale_out_stop=Stop(stop_out, stop_out + rng.randint(0, 4), *_warm_up(rng, 0.5)),
        scale_in_stop=Stop(stop_in, stop_in + rng.randint(0, 3), *_warm_up(rng, 0.1)),
        replay_s=rng.choice([0, 1, 3, 9, 12]),  # 9 and 12: a tail summed pairwise
        base_latency_s=rng.choice([0.0, 0.5]),
        target_latency_s=rng.choice([None, None, 1.0, 2.5]),  # the latency objective's caught-up bound
    )
    floor = (
        np.zeros(total)
        if model.target_latency_s and rng.random() < 0.5
        else np.maximum(np.asarray(arrivals), 1.0)
        if rng.random() < 0.7
        else np.full(total, rng.uniform(0.0, 50.0))
    )
    max_rescales = rng.choice([None, 0, 1, 3])
    start = None
    if rng.random() < 0.7:
        backlog = rng.choice([0.0, -0.0, rng.uniform(0.0, 20.0) * per_executor])
        start = Start(rng.choice(sizes), backlog, rng.choice([0, 0, 5, 20]))
    problem = schedule._Problem.of(np.asarray(arrivals), model, rng.randint(2, 8), floor, max_rescales, start)
    return problem, start


def _warm_up(rng: random.Random, share: float) -> tuple[int, float]:
    if rng.random() >= share:
        return 0, 1.0
    return rng.randint(1, 12), rng.choice([0.0, 0.5, rng.uniform(0.1, 0.9)])


def _run(p: schedule._Problem, start: Start | None) -> list[object]:
    """Every state array after every interval, byte for byte, and the parents (or where it became infeasible)."""
    try:
        states, first = schedule._first_states(p, start)
    except ScheduleInfeasible as exc:
        return ["infeasible", exc.t_s]
    segments = max(1, math.ceil(p.total / p.interval))
    parents = np.full((segments, p.nsz, p.levels), -1, dtype=np.int64)
    seen: list[object] = []
    for k in range(first, segments):
        try:
            states = schedule._advance(p, states, schedule._Segment.of(p, k), parents[k])
        except ScheduleInfeasible as exc:
            return [*seen, "infeasible", exc.t_s]
        arrays = (
            states.cost,
            states.backlog,
            states.tail,
            states.recovered,
            states.gate,
            states.restart,
            states.warm_end,
            states.warm_cap,
        )
        seen.append(tuple(a.tobytes() for a in arrays))
    return [*seen, parents.tobytes()]


@pytest.mark.parametrize("seed", range(400))
def test_small_and_vectorized_paths_give_the_same_bits(seed: int) -> None:
    p, start = _random_problem(seed)
    assert p.small is not None, "a problem this size takes the plain-float path"
    assert _run(p, start) == _run(replace(p, small=None), start)


def test_the_random_problems_rescale_recover_and_fail() -> None:
    """The comparison above means something only if the problems reach every outcome."""
    outcomes = {"infeasible": 0, "rescales": 0, "holds": 0}
    for seed in range(400):
        p, start = _random_problem(seed)
        try:
            found = schedule.cheapest_schedule(
                p.w, _model_of(p), interval_s=p.interval, caught_up_records=p.floor, start=start
            )
        except ScheduleInfeasible:
            outcomes["infeasible"] += 1
        else:
            outcomes["rescales" if found.rescales else "holds"] += 1
    assert min(outcomes.values()) >= 40, outcomes


def _model_of(p: schedule._Problem) -> QueueModel:
    return QueueModel(
        scaleouts=tuple(int(n) for n in p.sizes),
        capacity_per_s=tuple(float(c) for c in p.caps),
        target_recovery_s=p.target,
        scale_out_stop=Stop(p.out_from, p.out_to, p.out_warm, p.out_ratio),
        scale_in_stop=Stop(p.in_from, p.in_to, p.in_warm, p.in_ratio),
        replay_s=p.ckpt,
        base_latency_s=p.base,
        target_latency_s=None if math.isfinite(p.lat_cap) else float(p.floor_by_size[0] / p.caps[0] + p.base),
    )


@pytest.mark.parametrize(
    "values",
    [
        pytest.param([float("nan"), 1.0], id="nan"),
        pytest.param([float("inf"), 1.0], id="infinite"),
        pytest.param([1e200, 1.0], id="beyond-the-magnitude-bound"),
    ],
)
def test_inputs_that_could_make_a_nan_take_the_vectorized_path(values: list[float]) -> None:
    model = QueueModel((1, 2), (10.0, 20.0), 5.0, Stop(0, 1), Stop(0, 1))
    p = schedule._Problem.of(np.asarray(values * 5), model, 2, np.ones(10), None)
    assert p.small is None


def test_a_zero_capacity_takes_the_vectorized_path() -> None:
    model = QueueModel((1, 2), (0.0, 20.0), 5.0, Stop(0, 1), Stop(0, 1))
    assert schedule._Problem.of(np.ones(10), model, 2, np.ones(10), None).small is None


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 15, 16, 17, 64, 127, 128, 129, 300])
def test_pairwise_sum_is_numpys_to_the_last_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(50):
        row = (rng.random(n) * rng.choice([1e-3, 1.0, 1e8], n)).tolist()
        assert schedule._pairwise_sum(row) == float(np.asarray([row]).sum(axis=1)[0])
