"""Simulation tests: the daedalus policy drives the real controller tick, deterministically."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.config import Config
from daedalus_spark.domain import Reason
from daedalus_spark.sim.daedalus import DaedalusPolicy
from daedalus_spark.sim.evaluate import controller_config
from daedalus_spark.sim.jobmodel import DowntimeModel, JobModel, StartupModel
from daedalus_spark.sim.metrics import RunMetrics, summarize
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


def _metrics(run: RunResult, oracle: RunResult) -> RunMetrics:
    return summarize(
        run,
        static_executors=12,
        oracle_executor_hours=oracle.scaleout.sum() / 3600,
        target_recovery_s=600,
        target_latency_s=30,
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
    assert m.vs_static < 1.0
    assert m.final_lag_records < 1e6


def test_daedalus_keeps_the_recovery_target_on_a_sine(runs) -> None:
    (a, _), _, oracle = runs
    assert _metrics(a, oracle).recovery_violations == 0


def test_ticks_before_the_querys_first_commit_skip_as_live() -> None:
    """With a start-up (the query starts at 50 s; its first batch, 250,000 records on 2 executors after a 40-s
    stall, commits at about 97 s), the tick at 60 s finds no series, as the live monitor before the first progress
    event; the tick at 120 s decides."""
    startup = StartupModel(
        query_start=DowntimeModel(low_s=50, high_s=50), first_batch_stall=DowntimeModel(low_s=40, high_s=40)
    )
    model = JobModel(
        engine="microbatch", rescale="in_place", startup=startup, initial_scaleout=2, executor_capacity_per_s=20_000
    )
    config = controller_config(Config(), model)
    policy = DaedalusPolicy(config)
    run_policy(make_setup(np.full(600, 5_000.0), model, config, seed=2), policy)
    first, second = policy.decisions[:2]
    assert (first.time_s, first.reason) == (60.0, Reason.SKIP_MISSING_DATA)
    assert first.evidence.skip is not None and first.evidence.skip.monitor_error == "empty"
    assert second.time_s == 120.0 and second.reason != Reason.SKIP_MISSING_DATA
