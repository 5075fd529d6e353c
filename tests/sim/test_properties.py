"""Simulation tests: properties on random small traces — the oracle is a lower bound; Lindley equals the loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from daedalus_spark.config import Config
from daedalus_spark.plan.schedule import lindley
from daedalus_spark.sim.hpa import HpaPolicy
from daedalus_spark.sim.jobmodel import DowntimeModel, JobModel
from daedalus_spark.sim.policies import StaticPolicy
from daedalus_spark.sim.runner import make_setup, run_oracle, run_policy

traces = st.lists(st.floats(min_value=0, max_value=5000, allow_nan=False), min_size=30, max_size=400)


@given(b0=st.floats(0, 1e4), arrivals=traces, cap=st.floats(0, 5000))
def test_vectorized_backlog_equals_the_loop(b0: float, arrivals: list[float], cap: float) -> None:
    expected, b = [], b0
    for a in arrivals:
        b = max(0.0, b + a - cap)
        expected.append(b)
    got = lindley(b0, np.asarray(arrivals), np.full(len(arrivals), cap))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    workload=traces,
    static=st.integers(1, 6),
    target=st.floats(0.3, 0.95),
    seed=st.integers(0, 5),
    zipf=st.floats(0, 1.5),
)
def test_oracle_is_a_lower_bound(workload: list[float], static: int, target: float, seed: int, zipf: float) -> None:
    config = Config.model_validate({"controller": {"max_scaleout": 6}})
    model = JobModel(
        reference_scaleout=6,
        partitions=12,
        zipf_exponent=zipf,
        utilization_noise_ratio=0.01,
        downtime_scale_out=DowntimeModel(low_s=2, high_s=5),
        downtime_scale_in=DowntimeModel(low_s=1, high_s=3),
    )
    setup = make_setup(np.asarray(workload), model, config, seed)
    oracle = run_oracle(setup)
    policies = [StaticPolicy(static), StaticPolicy(6), HpaPolicy(target_ratio=target, max_scaleout=6)]
    for policy in policies:
        run = run_policy(setup, policy)
        covered = run.processing & (run.capacity_per_s >= run.workload_per_s)
        # wherever a policy kept up with a second's arrivals, it used at least the oracle's executors
        assert (run.scaleout[covered] >= oracle.scaleout[covered]).all(), policy.name
        if covered.all() or policy.name == "static:6":
            assert run.scaleout.sum() >= oracle.scaleout.sum(), policy.name
