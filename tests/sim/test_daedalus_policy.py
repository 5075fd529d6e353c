"""Simulation tests: the daedalus policy drives the real controller tick, deterministically."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.config import Config
from daedalus_spark.sim.daedalus import DaedalusPolicy
from daedalus_spark.sim.evaluate import controller_config
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.metrics import summarize
from daedalus_spark.sim.runner import RunResult, make_setup, run_oracle, run_policy


def _trace() -> np.ndarray:
    t = np.arange(3600)
    return 22000 + 17000 * np.sin(2 * np.pi * t / 5400)


@pytest.fixture(scope="module")
def runs() -> tuple[tuple[RunResult, DaedalusPolicy], tuple[RunResult, DaedalusPolicy], RunResult]:
    config = controller_config(Config(), JobModel())  # the controller knows the topic's 24 partitions
    setup = make_setup(_trace(), JobModel(), config, seed=2)
    out = []
    for _ in range(2):
        policy = DaedalusPolicy(config)
        out.append((run_policy(setup, policy), policy))
    return out[0], out[1], run_oracle(setup)


def _metrics(run: RunResult, oracle: RunResult) -> dict[str, float | int]:
    return summarize(
        run, static_executors=12, oracle_executor_hours=oracle.scaleout.sum() / 3600, target_recovery_s=600
    )


def test_daedalus_ticks_once_per_loop_interval(runs) -> None:
    (_, policy), _, _ = runs
    assert len(policy.decisions) == len(_trace()) // 60 - 1
    assert [d.time_s for d in policy.decisions[:2]] == [60.0, 120.0]


def test_daedalus_is_deterministic_and_saves_executors(runs) -> None:
    (a, pa), (b, pb), oracle = runs
    np.testing.assert_array_equal(a.scaleout, b.scaleout)
    assert [d.target_scaleout for d in pa.decisions] == [d.target_scaleout for d in pb.decisions]
    m = _metrics(a, oracle)
    assert m == _metrics(b, oracle)
    assert m["vs_static"] < 1.0
    assert m["final_lag_records"] < 1e6


def test_daedalus_keeps_the_recovery_target_on_a_sine(runs) -> None:
    (a, _), _, oracle = runs
    assert _metrics(a, oracle)["recovery_violations"] == 0
