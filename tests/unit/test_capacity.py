"""Capacity models (§3.1): regression on measured data, skew in throughput shares, and the guarded edge cases."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from daedalus_spark.analyze.capacity import FORGET_EXECUTOR_AFTER_S, CapacityModel
from daedalus_spark.config import CapacityConfig
from daedalus_spark.monitor.files import read_metric_csv
from daedalus_spark.report.capacity_report import capacity_from_csv
from tests.conftest import MEASUREMENTS, observation


def single_executor():
    cpu = next(iter(read_metric_csv(MEASUREMENTS / "assumptions_cpu_1.csv").columns.values()))
    thr = next(iter(read_metric_csv(MEASUREMENTS / "assumptions_throughput_1.csv").columns.values()))
    return cpu, thr


def learn(model, cpu, thr, executor="w"):
    model.learn(observation(workload=list(thr), executors={executor: (list(thr), list(cpu))}))


def test_regression_on_measured_single_executor_matches_numpy_fit():
    cpu, thr = single_executor()
    model = CapacityModel(CapacityConfig())
    learn(model, cpu, thr)
    slope, intercept = np.polyfit(cpu, thr, 1)
    reg = model.regressions["w"]
    assert reg.slope == pytest.approx(slope, rel=1e-9)
    assert reg.intercept == pytest.approx(intercept, rel=1e-9)
    assert np.corrcoef(cpu, thr)[0, 1] > 0.98  # the linearity the paper relies on (Fig. 2)


def test_capacity_trained_below_70_percent_predicts_the_high_utilization_throughput():
    cpu, thr = single_executor()
    # CPU is exported as a 1-minute average (4 samples): throughput averaged the same way lines the windows up.
    thr = pd.Series(thr).rolling(4, min_periods=1).mean().to_numpy()
    low = cpu <= 0.7
    model = CapacityModel(CapacityConfig())
    learn(model, cpu[low], thr[low])
    high = cpu >= 0.9
    predicted = np.array([model.regressions["w"].predict(x) for x in cpu[high]])
    error = np.abs(predicted - thr[high]).sum() / thr[high].sum()
    assert high.sum() >= 10
    assert error <= 0.03


def test_skew_at_saturation_matches_measured_total_throughput():
    report = capacity_from_csv(
        MEASUREMENTS / "data_skew_cpu_12.csv", MEASUREMENTS / "data_skew_throughput_12.csv", CapacityConfig()
    )
    total = read_metric_csv(MEASUREMENTS / "data_skew_total_throughput.csv").columns["Value"]
    measured = float(np.mean(total[-4:]))
    table = report.table
    assert table.current_per_s == pytest.approx(measured, rel=0.05)
    assert sum(w.capacity_per_s for w in table.executors) == pytest.approx(table.current_per_s)
    assert all(w.skew_factor_ratio <= 1.0 + 1e-9 for w in table.executors)
    assert min(abs(w.skew_factor_ratio - 1.0) for w in table.executors) < 1e-9  # the constraining executor
    shares = [w.load_share_ratio for w in table.executors]
    assert sum(shares) == pytest.approx(1.0)


def idle_floor_executor(capacity, share_of, total, floor=0.1, samples=30, rng=None):
    """Synthetic CPU with an idle floor: u = floor + (1 - floor) * throughput / capacity."""
    rng = rng or np.random.default_rng(0)
    thr = share_of * total * rng.uniform(0.6, 1.0, samples)
    return list(thr), list(floor + (1 - floor) * thr / capacity)


def test_skew_far_below_saturation_is_proportional_in_throughput_shares():
    # Two identical executors, 60/40 key skew, observed at 15-30 % load with a 10 % idle CPU floor.
    rng = np.random.default_rng(1)
    t1, u1 = idle_floor_executor(1000, 0.6, 300, rng=rng)
    t2 = [x * 0.4 / 0.6 for x in t1]
    u2 = [0.1 + 0.9 * x / 1000 for x in t2]
    model = CapacityModel(CapacityConfig(unobserved_margin_ratio=0))
    obs = observation(workload=[a + b for a, b in zip(t1, t2, strict=False)], executors={"a": (t1, u1), "b": (t2, u2)})
    model.learn(obs)
    table = model.table(obs, 4)
    # The job saturates when executor a (60 % of the keys) reaches 1000/s: total 1000 / 0.6.
    assert table.current_per_s == pytest.approx(1000 / 0.6, rel=1e-6)
    assert table.at(4) == pytest.approx(2 * 1000 / 0.6, rel=1e-6)  # mean executor capacity x n


def test_slow_executor_constrains_the_job_even_with_a_smaller_share():
    u_fast = [0.1 + 0.02 * i for i in range(10)]
    t_fast = [1000 * (u - 0.1) / 0.9 for u in u_fast]
    t_slow = [x * 0.9 for x in t_fast]  # 47 % of the load ...
    u_slow = [0.1 + 0.9 * x / 400 for x in t_slow]  # ... but only 400/s of capacity
    model = CapacityModel(CapacityConfig())
    obs = observation(workload=10.0, samples=10, executors={"fast": (t_fast, u_fast), "slow": (t_slow, u_slow)})
    model.learn(obs)
    table = model.table(obs, 2)
    share_slow = 0.9 / 1.9
    assert table.current_per_s == pytest.approx(400 / share_slow, rel=1e-6)


@pytest.mark.parametrize(
    "thr,util,method",
    [
        pytest.param([100.0, 110.0], [0.2, 0.22], "ratio", id="too-few-points"),
        pytest.param([100.0] * 10, [0.25] * 10, "ratio", id="no-utilization-variance"),
        pytest.param([100.0 - i for i in range(10)], [0.2 + 0.02 * i for i in range(10)], "ratio", id="negative-slope"),
        pytest.param(
            [100.0 * (1 + i) for i in range(10)], [0.1 * (1 + i) for i in range(10)], "regression", id="clean"
        ),
    ],
)
def test_capacity_method_guards(thr, util, method):
    model = CapacityModel(CapacityConfig())
    obs = observation(workload=thr, executors={"w": (thr, util)})
    model.learn(obs)
    capacity, used = model.own_capacity("w")
    assert used == method
    if method == "ratio":
        assert capacity == pytest.approx(np.mean(thr) / np.mean(util))
    else:
        assert capacity == pytest.approx(1000.0)


def test_nan_negative_and_absurd_samples_are_not_learned():
    thr = [100.0, math.nan, -5.0, 200.0, 300.0, 100.0]
    util = [0.1, 0.5, 0.5, math.inf, 7.0, 0.1]
    model = CapacityModel(CapacityConfig())
    learned = model.learn(observation(workload=[1.0] * 6, executors={"w": (thr, util)}))
    assert learned == 2
    assert model.regressions["w"].mean_y == 100.0


def test_a_joining_executor_counts_as_its_peers_and_gone_executors_are_forgotten():
    model = CapacityModel(CapacityConfig())
    thr = [100.0 * (1 + i) for i in range(10)]
    util = [0.1 * (1 + i) for i in range(10)]
    model.learn(observation(time_s=0.0, workload=thr, executors={"old": (thr, util)}))
    obs = observation(
        time_s=60.0, workload=[1.0] * 10, executors={"old": (thr, util), "new": ([math.nan] * 10, [math.nan] * 10)}
    )
    model.learn(obs)
    table = model.table(obs, 3)
    methods = {w.executor_id: w.method for w in table.executors}
    assert methods == {"old": "regression", "new": "joining"}
    assert table.current_per_s == pytest.approx(2 * 1000.0)  # the new one will carry what the old one does
    later = observation(time_s=60.0 + FORGET_EXECUTOR_AFTER_S + 1, workload=thr, executors={"new": (thr, util)})
    model.learn(later)
    assert "old" not in model.regressions


def test_capacities_observed_at_a_scaleout_are_preferred_over_extrapolation():
    model = CapacityModel(CapacityConfig())
    thr = [100.0 * (1 + i) for i in range(10)]
    util = [0.1 * (1 + i) for i in range(10)]
    one = observation(workload=thr, executors={"a": (thr, util)})
    model.learn(one)
    model.remember(model.table(one, 3))  # 1 executor: 1000/s observed
    two = observation(workload=thr, executors={"a": (thr, util), "b": ([x / 2 for x in thr], util)})
    model.learn(two)
    table = model.table(two, 3)
    assert table.observed_scaleouts == {1, 2}
    assert table.at(1) == pytest.approx(1000.0)  # observed, not the mean of the two executors now
    assert table.at(3) == pytest.approx(table.current_per_s / 2 * 3 * 0.9)  # unseen: the 10 % margin


def test_no_table_without_any_usable_executor_data():
    model = CapacityModel(CapacityConfig())
    obs = observation(executors={"w": ([math.nan] * 3, [math.nan] * 3)}, workload=[1.0] * 3)
    model.learn(obs)
    assert model.table(obs, 4) is None


@pytest.mark.parametrize(
    "partitions,current,expected",
    [
        pytest.param(0, 12, {11: 11 / 12, 6: 0.5, 24: 2.0}, id="unknown-partitions-mean-executor-times-n"),
        pytest.param(24, 12, {11: 2 / 3, 8: 2 / 3, 6: 0.5, 24: 2.0, 30: 2.0}, id="24-partitions"),
        pytest.param(120, 12, {11: 10 / 11, 10: 10 / 12}, id="120-partitions"),
        pytest.param(24, 11, {12: 3 / 2, 8: 1.0}, id="from-a-lopsided-scaleout"),
    ],
)
def test_unseen_scaleouts_follow_the_busiest_executors_partitions(partitions, current, expected):
    model = CapacityModel(CapacityConfig(partitions=partitions, unobserved_margin_ratio=0))
    thr = [100.0 * (1 + i) for i in range(10)]
    util = [0.1 * (1 + i) for i in range(10)]
    obs = observation(workload=thr, executors={f"w{i}": (thr, util) for i in range(current)})
    model.learn(obs)
    table = model.table(obs, 30)
    for n, ratio in expected.items():
        assert table.at(n) == pytest.approx(table.current_per_s * ratio), n


def test_unseen_scaleouts_carry_the_margin_and_observed_ones_do_not():
    model = CapacityModel(CapacityConfig(unobserved_margin_ratio=0.1))
    thr = [100.0 * (1 + i) for i in range(10)]
    util = [0.1 * (1 + i) for i in range(10)]
    obs = observation(workload=thr, executors={"a": (thr, util), "b": (thr, util)})
    model.learn(obs)
    table = model.table(obs, 4)
    assert table.at(2) == pytest.approx(2000.0)  # the current scale-out, measured
    assert table.at(4) == pytest.approx(4000.0 * 0.9)
    assert table.at(1) == pytest.approx(1000.0 * 0.9)


def test_an_executor_with_a_noisy_narrow_range_borrows_the_pooled_slope():
    rng = np.random.default_rng(7)
    model = CapacityModel(CapacityConfig())
    # An old executor seen over a wide load range: throughput = 1000 * (u - 0.1) / 0.9.
    u_old = np.linspace(0.15, 0.9, 60)
    t_old = 1000 * (u_old - 0.1) / 0.9
    model.learn(observation(workload=list(t_old), executors={"old": (list(t_old), list(u_old))}))
    # A new executor seen for a minute at a steady 300/s, its CPU noisy: its own slope is meaningless.
    t_new = 300 * rng.uniform(0.99, 1.01, 60)
    u_new = 0.1 + 0.9 * t_new / 1000 + rng.normal(0, 0.02, 60)
    obs = observation(
        workload=list(t_new), executors={"old": (list(t_new), list(u_new)), "new": (list(t_new), list(u_new))}
    )
    model.learn(obs)
    assert model.regressions["new"].correlation < 0.6
    capacity, method = model.own_capacity("new")
    assert method == "pooled"
    assert capacity == pytest.approx(1000, rel=0.1)
    assert model.regressions["new"].mean_y / model.regressions["new"].mean_x < 850  # the ratio: 15 % low


SKEWED = {("t", 0): 400.0, ("t", 1): 200.0, ("t", 2): 100.0, ("t", 3): 100.0}


def _two_executors_with(partitions: dict[tuple[str, int], float] | None, rule: str) -> tuple[CapacityModel, object]:
    model = CapacityModel(CapacityConfig(partitions=4, partition_assignment=rule, unobserved_margin_ratio=0))
    thr = [100.0 * (1 + i) for i in range(10)]
    util = [0.1 * (1 + i) for i in range(10)]
    obs = observation(workload=thr, executors={"a": (thr, util), "b": (thr, util)}, partitions=partitions)
    model.learn(obs)
    return model, obs


def test_measured_partition_shares_decide_unseen_scaleouts() -> None:
    model, obs = _two_executors_with(SKEWED, "any_core")
    assert model.partition_shares == pytest.approx({("t", 0): 0.5, ("t", 1): 0.25, ("t", 2): 0.125, ("t", 3): 0.125})
    table = model.table(obs, 4)
    # any core: at 2 executors {400} and {200, 100, 100} -> busiest 1/2; at 3 and 4 the 400 partition alone is 1/2:
    # more executors than 2 add nothing. At 1 executor the busiest holds everything.
    assert table.at(3) == pytest.approx(table.current_per_s)
    assert table.at(4) == pytest.approx(table.current_per_s)
    assert table.at(1) == pytest.approx(table.current_per_s / 2)


def test_without_partition_rates_partitions_count_as_equal() -> None:
    model, obs = _two_executors_with(None, "any_core")
    assert model.partition_shares == {}
    table = model.table(obs, 4)
    assert table.at(4) == pytest.approx(table.current_per_s * 2)  # 4 equal partitions: 2 per executor -> 1


def test_partition_shares_move_toward_each_window_and_ignore_empty_ones() -> None:
    model, _ = _two_executors_with(SKEWED, "kafka")
    even = dict.fromkeys(SKEWED, 100.0)
    model.learn(observation(executors={"a": ([1.0], [0.5])}, samples=1, partitions=even))
    # 10 % of the way from 1/2 toward 1/4
    assert model.partition_shares[("t", 0)] == pytest.approx(0.9 * 0.5 + 0.1 * 0.25)
    before = dict(model.partition_shares)
    model.learn(observation(executors={"a": ([1.0], [0.5])}, samples=1))  # no partition rates reported
    model.learn(observation(executors={"a": ([1.0], [0.5])}, samples=1, partitions={("t", 0): 0.0}))  # total 0
    assert model.partition_shares == before
    assert sum(model.partition_shares.values()) == pytest.approx(1.0)


def test_partition_shares_survive_a_restart() -> None:
    model, _ = _two_executors_with(SKEWED, "kafka")
    restored = CapacityModel.from_state(model.config, model.to_state())
    assert restored.partition_shares == pytest.approx(model.partition_shares)
    version_1 = {k: v for k, v in model.to_state().items() if k != "partition_shares"} | {"version": 1}
    assert CapacityModel.from_state(model.config, version_1).partition_shares == {}


def test_a_partition_no_longer_reported_fades_out_and_is_forgotten() -> None:
    model, _ = _two_executors_with(SKEWED, "kafka")
    renamed = {("u", p): rate for (_, p), rate in SKEWED.items()}
    for _ in range(200):
        model.learn(observation(executors={"a": ([1.0], [0.5])}, samples=1, partitions=renamed))
    assert {topic for topic, _ in model.partition_shares} == {"u"}
    assert model.partition_shares[("u", 0)] == pytest.approx(0.5, rel=1e-6)


_SHARES_UNDER_HASH_SEED = """
from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.config import CapacityConfig
from tests.conftest import observation
model = CapacityModel(CapacityConfig(partitions=6))
first = {("orders", p): 100.0 * (p + 1) for p in range(4)}
later = {("orders", 0): 50.0, ("clicks", 1): 300.0, ("orders", 3): 25.0, ("clicks", 0): 70.0}
for rates in (first, later, later):
    model.learn(observation(executors={"a": ([1.0], [0.5])}, samples=1, partitions=rates))
import json
print(json.dumps([[t, p, share] for (t, p), share in model.partition_shares.items()]))
"""


def test_partition_shares_do_not_depend_on_the_string_hash_seed() -> None:
    """Known partitions keep their order and new ones follow in the observation's: a set's order would follow
    PYTHONHASHSEED, and so would every later sum over the shares."""
    root = Path(__file__).resolve().parents[2]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _SHARES_UNDER_HASH_SEED],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
        ).stdout
        for seed in ("0", "1", "2", "3")
    }
    assert len(outputs) == 1
    keys = [(t, p) for t, p, _ in json.loads(outputs.pop())]
    assert keys == [("orders", p) for p in range(4)] + [("clicks", 1), ("clicks", 0)]


def test_a_raised_partition_count_replaces_the_shares_and_the_partition_bound_follows() -> None:
    two = {("t", 0): 300.0, ("t", 1): 300.0}
    model, obs = _two_executors_with(two, "any_core")
    assert model.table(obs, 4).at(4) == pytest.approx(model.table(obs, 4).at(2))  # 2 partitions: 2 executors busy
    four = two | {("t", 2): 300.0, ("t", 3): 300.0}
    model.learn(observation(executors={"a": ([1.0], [0.5])}, samples=1, partitions=four))
    assert model.partition_shares == pytest.approx(dict.fromkeys(four, 0.25))  # at once, not 10 % of the way
    assert model.table(obs, 4).at(4) == pytest.approx(2 * model.table(obs, 4).at(2))
