"""Table tests: the live comparison's figures — rescales as settled executor levels, lag in seconds of input."""

import numpy as np
import pytest

from daedalus_spark.demo.live import DemoPlan, autoscaler_job_args
from daedalus_spark.demo.summary import lag_seconds, settled_rescales


@pytest.mark.parametrize(
    ("live", "rescales"),
    [
        pytest.param([2] * 30, 0, id="held"),
        pytest.param([2] * 10 + [3] * 2 + [4] * 20, 1, id="joining-one-by-one-is-one-rescale"),
        pytest.param([2] * 10 + [4] * 10 + [2] * 10, 2, id="out-and-in"),
        pytest.param([4] * 10 + [3] * 1 + [4] * 10, 0, id="executor-lost-and-replaced"),
        pytest.param([1] * 6 + [2] * 6 + [3] * 6 + [4] * 6, 3, id="doubling-rounds-that-settle"),
    ],
)
def test_settled_rescales(live, rescales):
    t = np.arange(len(live), dtype=float) * 2.0  # the sampler's 2-s period: 10 s is five samples
    assert settled_rescales(t, np.array(live, dtype=float)) == rescales


def test_lag_seconds_is_the_age_of_the_oldest_unread_record():
    t = np.arange(0.0, 10.0)
    records_in = 100.0 * t  # 100 records a second appended
    lag = np.array([0, 0, 0, 300, 300, 300, 150, 0, 0, 0], dtype=float)
    np.testing.assert_allclose(lag_seconds(t, records_in, lag), [0, 0, 0, 3, 3, 3, 1.5, 0, 0, 0])


def test_lag_seconds_across_a_pause_in_the_load():
    t = np.arange(0.0, 6.0)
    records_in = np.array([0, 100, 200, 200, 200, 300], dtype=float)  # nothing appended from t=2 to t=4
    lag = np.array([0, 0, 100, 100, 0, 0], dtype=float)
    # at t=3, committed 100 was the end offset at t=1: the record waits 2 s although none arrived since
    assert lag_seconds(t, records_in, lag)[3] == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("autoscaler", "expected"),
    [
        pytest.param("daedalus", ["--initial-executors", "2"], id="ours-sets-the-initial-count"),
        pytest.param("batch-ratio", ["--initial-executors", "2"], id="rule-behind-our-actuator"),
        pytest.param("static", ["--initial-executors", "3"], id="static-holds-the-max"),
    ],
)
def test_the_job_gets_its_executors_from_the_autoscaler(autoscaler, expected):
    assert autoscaler_job_args(DemoPlan(autoscaler=autoscaler)) == expected


def test_dynamic_allocation_is_switched_on_in_the_job_with_shuffle_tracking():
    args = autoscaler_job_args(DemoPlan(autoscaler="spark-da"))
    confs = dict(a.split("=", 1) for a in args if a != "--conf")
    assert "--initial-executors" not in args
    assert confs["spark.dynamicAllocation.enabled"] == "true"
    assert confs["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert (confs["spark.dynamicAllocation.minExecutors"], confs["spark.dynamicAllocation.maxExecutors"]) == ("1", "3")


def _summary(**changes):
    base = {
        "autoscaler": "daedalus",
        "ticks": 40,
        "scale_outs": 0,
        "scale_ins": 0,
        "drained": True,
        "records_exact": True,
        "records_in": 1000,
        "records_out": 1000,
        "lag_p95_s": 12.5,
        "lag_max_records": 900,
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, []),  # the job needed no rescale and got none: kept the lag in target, counted exactly
        ({"scale_outs": 2, "scale_ins": 2}, []),
        ({"records_out": 999, "records_exact": False}, ["words counted exactly: 1000 appended, 999 counted"]),
        ({"drained": False, "records_exact": False}, ["lag worked off after the load cycle: not within the drain"]),
        ({"lag_p95_s": 75.0}, ["lag p95 within the recovery target: 75.0 s of input against controller.target"]),
        ({"lag_p95_s": None}, ["lag p95 within the recovery target: None s"]),
        ({"ticks": 0}, ["the controller decided: 0 ticks"]),
        ({"ticks": 0, "autoscaler": "spark-da"}, []),
        ({"lag_p95_s": 75.0, "autoscaler": "static"}, []),  # a comparison: its lag is reported, not demanded
    ],
    ids=[
        "held-and-fine",
        "rescaled-and-fine",
        "not-exact",
        "not-drained",
        "lag-over",
        "no-lag",
        "no-ticks",
        "da",
        "static-lag",
    ],
)
def test_each_failed_demo_check_is_one_line_with_its_figures(changes, expected) -> None:
    from daedalus_spark.demo.summary import failed_checks

    lines = failed_checks(_summary(**changes), target_recovery_s=60.0)
    assert len(lines) == len(expected), lines
    for line, part in zip(lines, expected, strict=True):
        assert line.startswith("demo check failed: ") and part in line and "\n" not in line, line
