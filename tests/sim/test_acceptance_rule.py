"""The acceptance rule's recovery: excused from a rescale's request (or the query's start) until, once it has taken
effect, latency is back within the objective and holds there for as long again."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from daedalus_spark.sim.job import Rescale
from daedalus_spark.sim.metrics import latency_violation_mask, passes, recovering
from daedalus_spark.sim.runner import RunResult

OBJECTIVE_S = 10.0
TARGET_S = 20.0


def run_with(
    latency_s: list[float], rescale_at: int | None = 2, downtime_s: int = 1, registration_s: float = 0.0
) -> RunResult:
    n = len(latency_s)
    rescale = Rescale(rescale_at or 0, 1, 2, downtime_s, 0.0, registration_s=registration_s)
    rescales = () if rescale_at is None else (rescale,)
    ones = np.ones(n)
    return RunResult(
        policy="p",
        workload_per_s=ones,
        scaleout=ones,
        processing=np.ones(n, dtype=bool),
        processed_per_s=ones,
        lag_records=np.zeros(n),
        latency_s=np.asarray(latency_s, dtype=float),
        capacity_per_s=ones,
        rescales=rescales,
    )


LOW, HIGH = 1.0, 50.0


@pytest.mark.parametrize(
    ("latency_s", "violations", "ok"),
    [
        pytest.param([LOW] * 40, 0, True, id="always-within"),
        # request at 2, down for 1 s, latency high until second 6, back within it at 7: excused 2..7
        pytest.param([LOW, LOW] + [HIGH] * 5 + [LOW] * 33, 0, True, id="recovers-then-stays"),
        # back within the objective at 7 for 3 s, above it again at 10-11 (between two batches of the backlog):
        # still recovering until it holds from 12 on
        pytest.param(
            [LOW, LOW] + [HIGH] * 5 + [LOW] * 3 + [HIGH] * 2 + [LOW] * 28, 0, True, id="a-dip-is-not-yet-a-recovery"
        ),
        # back within the objective from 7 and holding there for 12 s, above it again at 19-20: not excused
        pytest.param(
            [LOW, LOW] + [HIGH] * 5 + [LOW] * 12 + [HIGH] * 2 + [LOW] * 19, 2, False, id="above-after-recovery"
        ),
        # never back within the target: a recovery violation, the target's seconds excused, the rest counted
        pytest.param([LOW, LOW] + [HIGH] * 25 + [LOW] * 13, 5, False, id="not-recovered-in-time"),
        # the run ends 10 s after the request, still above the objective: not shown to recover, a failure
        pytest.param([LOW, LOW] + [HIGH] * 10, 0, False, id="not-recovered-when-the-run-ends"),
        # back within the objective for its last 3 s, shorter than the hold: that holds to the end, recovered
        pytest.param([LOW, LOW] + [HIGH] * 7 + [LOW] * 3, 0, True, id="recovered-at-the-run-end"),
    ],
)
def test_latency_is_excused_only_until_the_recovery(latency_s: list[float], violations: int, ok: bool) -> None:
    run = run_with(latency_s)
    late = latency_violation_mask(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S)
    assert int(late.sum()) == violations
    assert passes(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S) is ok


def test_the_recovery_window_runs_from_the_request_through_the_first_second_within_the_objective() -> None:
    run = run_with([LOW, LOW] + [HIGH] * 5 + [LOW] * 33)
    window = recovering(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S)
    assert np.flatnonzero(window).tolist() == [2, 3, 4, 5, 6, 7]


def test_an_in_place_rescale_recovers_from_when_its_executors_have_joined() -> None:
    # requested at 2 while within the objective, the joining executors registered 6 s later; latency above it at 5-8
    run = run_with([LOW] * 5 + [HIGH] * 4 + [LOW] * 31, downtime_s=0, registration_s=6.0)
    assert recovering(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S).sum() == 8  # seconds 2..9
    assert passes(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S)


def test_without_a_rescale_nothing_is_excused() -> None:
    run = run_with([LOW] * 5 + [HIGH] + [LOW] * 4, rescale_at=None)
    assert int(latency_violation_mask(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S).sum()) == 1


@pytest.mark.parametrize(
    ("latency_s", "committed_at", "ok"),
    [
        # the load began 4 s before the query's first commit; its backlog worked off by second 9: excused
        pytest.param([HIGH] * 9 + [LOW] * 31, 4, True, id="start-recovers-within-the-target"),
        # the same run judged without its start: the first seconds count
        pytest.param([HIGH] * 9 + [LOW] * 31, None, False, id="no-start-nothing-excused"),
        # back within the objective only at second 25, past the 20-s target: the start is held to it too
        pytest.param([HIGH] * 25 + [LOW] * 15, 4, False, id="start-recovers-too-late"),
    ],
)
def test_the_querys_start_is_a_recovery_held_to_the_target(
    latency_s: list[float], committed_at: int | None, ok: bool
) -> None:
    start = None if committed_at is None else Rescale(0, 0, 1, committed_at, 0.0, kind="start")
    run = dataclasses.replace(run_with(latency_s, rescale_at=None), start=start)
    assert passes(run, target_latency_s=OBJECTIVE_S, target_recovery_s=TARGET_S) is ok
