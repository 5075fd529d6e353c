"""Simulation tests: each baseline policy against a worked example, and policy names."""

from __future__ import annotations

import pytest

from daedalus_spark.config import Config, ControllerConfig
from daedalus_spark.sim.flink import (
    FlinkPolicy,
    FlinkSettings,
    align_to_partitions,
    flink_parallelism,
    target_capacity_per_s,
)
from daedalus_spark.sim.hpa import HpaPolicy, hpa_recommendation, scale_up_limit
from daedalus_spark.sim.policies import PolicyNameError, StaticPolicy, make_policy, parse_policy_list

# The largest scale-out these cases were written for (the config's default is the topic's partition count).
CONFIG = Config(controller=ControllerConfig(max_scaleout=12))


@pytest.mark.parametrize(
    ("current", "cpu", "target", "expected"),
    [
        pytest.param(4, 0.85, 0.8, 4, id="within-tolerance-up"),  # ratio 1.0625
        pytest.param(4, 0.73, 0.8, 4, id="within-tolerance-down"),  # ratio 0.9125
        pytest.param(4, 0.90, 0.8, 5, id="above-tolerance"),  # ceil(4 * 1.125) = 5
        pytest.param(10, 0.40, 0.8, 5, id="half-load"),  # ceil(10 * 0.5)
        pytest.param(3, 0.05, 0.8, 1, id="idle-floor-at-one"),
    ],
)
def test_hpa_recommendation(current: int, cpu: float, target: float, expected: int) -> None:
    assert hpa_recommendation(current, cpu, target) == expected


def test_hpa_scale_up_limit_is_max_of_double_and_plus_four() -> None:
    assert scale_up_limit(1) == 5
    assert scale_up_limit(3) == 7
    assert scale_up_limit(6) == 12


def test_hpa_scale_up_is_rate_limited_and_bounded() -> None:
    hpa = HpaPolicy(target_ratio=0.5, max_scaleout=12)
    assert hpa.step(0, 1, 1.0) == 2  # ceil(1 * 2) = 2 within the +4 limit
    assert hpa.step(15, 2, 1.0) == 4
    hpa = HpaPolicy(target_ratio=0.1, max_scaleout=100)
    assert hpa.step(0, 2, 1.0) == 6  # wants 20; +4 pods per 15 s


def test_hpa_scale_down_waits_for_the_stabilization_window() -> None:
    hpa = HpaPolicy(target_ratio=0.8, max_scaleout=12)
    assert hpa.step(0, 8, 0.8) == 8  # recommendation 8 recorded
    assert hpa.step(15, 8, 0.4) == 8  # wants 4, but 8 is in the window
    assert hpa.step(285, 8, 0.4) == 8  # t=0 still inside (285 - 300 < 0)
    assert hpa.step(300, 8, 0.4) == 4  # t=0 left the window: max over the window is 4
    assert hpa.step(315, 4, 0.6) == 4  # max(4, 4, 3) over the window


def test_flink_target_capacity_formula() -> None:
    s = FlinkSettings(target_utilization_ratio=0.7, catch_up_duration_s=1800, restart_time_s=300)
    # 7000/0.7 + (36000 + 7000 * 300) / 1800 = 10000 + 1186.67
    assert target_capacity_per_s(input_per_s=7000, lag_records=36000, utilization_ratio=0.7, s=s) == pytest.approx(
        10000 + 2_136_000 / 1800
    )


def test_flink_parallelism_worked_example() -> None:
    s = FlinkSettings(catch_up_duration_s=0)  # no backlog term: input / utilization only
    # true rate 4 executors x 1000 = 4000/s; input 3500/s: utilization 0.875 within [0.4, 1.0]: keep
    assert flink_parallelism(current=4, true_rate_per_s=4000, input_per_s=3500, lag_records=0, s=s) == 4
    # input 4200/s exceeds the true rate: needs 4200 / 0.7 = 6000/s -> ceil(4 * 6000 / 4000) = 6
    assert flink_parallelism(current=4, true_rate_per_s=4000, input_per_s=4200, lag_records=0, s=s) == 6
    # input 2000/s: utilization 0.5 within [0.4, 1.0]: keep
    assert flink_parallelism(current=4, true_rate_per_s=4000, input_per_s=2000, lag_records=0, s=s) == 4
    # input 400/s: wants ceil(4 * 571 / 4000) = 1, but max scale-down factor 0.6 keeps ceil(4 * 0.4) = 2
    assert flink_parallelism(current=4, true_rate_per_s=4000, input_per_s=400, lag_records=0, s=s) == 2


def test_flink_aligns_to_partition_divisors() -> None:
    assert align_to_partitions(5, 24, 12) == 6
    assert align_to_partitions(7, 24, 12) == 8
    assert align_to_partitions(9, 24, 12) == 12
    assert align_to_partitions(13, 24, 12) == 12  # clipped to the limit


def test_flink_scale_down_is_delayed_and_merged() -> None:
    policy = FlinkPolicy(FlinkSettings(scale_down_interval_s=3600))
    assert policy.delay_scale_down(0, 8, 4) == 8
    assert policy.delay_scale_down(1800, 8, 6) == 8
    assert policy.delay_scale_down(3600, 8, 3) == 6  # the highest recommendation in the interval
    assert policy.delay_scale_down(3700, 6, 9) == 9  # scale-ups at once


def test_policy_names() -> None:
    config = CONFIG
    assert isinstance(make_policy("static:5", config), StaticPolicy)
    assert make_policy("hpa:0.8", config).sync_interval_s == 15
    assert make_policy("flink", config).sync_interval_s == 60
    assert parse_policy_list("daedalus,static:12,oracle", config) == ["daedalus", "static:12", "oracle"]
    assert parse_policy_list("optimum,optimum:1", config) == ["optimum", "optimum:1"]


def test_flink_settings_are_overridable_by_name() -> None:
    policy = make_policy("flink:0.8:scale_down_interval_s=600:catch_up_duration_s=300", CONFIG)
    assert isinstance(policy, FlinkPolicy)
    assert policy.settings.target_utilization_ratio == 0.8
    assert policy.settings.scale_down_interval_s == 600 and policy.settings.catch_up_duration_s == 300
    assert policy.settings.metrics_window_s == 900


@pytest.mark.parametrize(
    "text",
    [
        "foo",
        "static",
        "static:x",
        "hpa:2",
        "hpa",
        "static:1,static:1",
        "",
        "oracle:3",
        "optimum:x",
        "optimum:-1",
        "optimum:nan",
        "flink:warp=3",
        "flink:1.5",
        "flink:metrics_window_s=x",
    ],
)
def test_bad_policy_names_are_clear_errors(text: str) -> None:
    with pytest.raises(PolicyNameError, match="polic"):
        parse_policy_list(text, CONFIG)
