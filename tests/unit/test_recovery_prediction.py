"""Predicted recovery time (§3.4) against hand-computed cases."""

import math

import pytest

from daedalus_spark.analyze.recovery_prediction import predict_recovery_s, replay_backlog_records


@pytest.mark.parametrize(
    "capacity,forecast,downtime,replay,lag,expected",
    [
        # 10 s down at 100/s = 1000 records; 50/s of headroom clears them in 20 s after the restart.
        pytest.param(150, [100] * 900, 10, 0, 0, 30, id="downtime-only"),
        # replay 1000 + lag 500 + 1000 during downtime = 2500 at 50/s headroom = 50 s, + 10 s down.
        pytest.param(150, [100] * 900, 10, 1000, 500, 60, id="replay-lag-and-downtime"),
        pytest.param(100, [100] * 900, 10, 0, 0, math.inf, id="no-headroom-never-recovers"),
        pytest.param(90, [100] * 900, 0, 0, 10, math.inf, id="overloaded-never-recovers"),
        pytest.param(150, [100] * 900, 12, 0, 0, 36, id="downtime-counted-once"),
        pytest.param(500, [0] * 900, 30, 0, 0, 30, id="idle-stream-recovers-at-restart"),
        pytest.param(150, [100] * 20, 10, 0, 0, math.inf, id="not-within-the-horizon"),
        pytest.param(150, [100] * 5, 10, 0, 0, math.inf, id="downtime-beyond-the-forecast"),
        # Arrivals 100/s for 10 s, then 200/s: backlog 1000, headroom 100/s after the restart: 10 s + 10 s.
        pytest.param(300, [100] * 10 + [200] * 890, 10, 0, 0, 20, id="forecast-shape-matters"),
        # Fractional downtime rounds up to whole seconds of arrivals (2 s x 100) at 100/s headroom.
        pytest.param(200, [100] * 900, 1.5, 0, 0, 4, id="fractional-downtime"),
    ],
)
def test_predicted_recovery(capacity, forecast, downtime, replay, lag, expected):
    got = predict_recovery_s(
        capacity_per_s=capacity,
        forecast_per_second=forecast,
        downtime_s=downtime,
        replay_records=replay,
        lag_records=lag,
    )
    assert got == expected


@pytest.mark.parametrize(
    "warmup_s,warm_capacity,expected",
    [
        # 1000 records after 10 s down; 150/s warm: 50/s of headroom, 20 s (as downtime-only above).
        pytest.param(0, None, 30, id="warm-at-once"),
        # 125/s for 20 s (500 worked off), then 150/s: the other 500 in 10 s.
        pytest.param(20, 125, 40, id="warming-20-s-at-125"),
        # 100/s while warming carries the load and no more: 1000 records left after 30 s, then 20 s.
        pytest.param(30, 100, 60, id="warming-30-s-at-the-load"),
    ],
)
def test_predicted_recovery_with_a_warm_up(warmup_s, warm_capacity, expected):
    got = predict_recovery_s(
        capacity_per_s=150,
        forecast_per_second=[100] * 900,
        downtime_s=10,
        replay_records=0,
        lag_records=0,
        warmup_s=warmup_s,
        warmup_capacity_per_s=warm_capacity,
    )
    assert got == expected


def test_recovery_grows_with_backlog_and_shrinks_with_capacity():
    base = {"forecast_per_second": [100] * 900, "downtime_s": 30, "replay_records": 0}
    assert predict_recovery_s(capacity_per_s=200, lag_records=0, **base) < predict_recovery_s(
        capacity_per_s=200, lag_records=10000, **base
    )
    assert predict_recovery_s(capacity_per_s=400, lag_records=0, **base) < predict_recovery_s(
        capacity_per_s=200, lag_records=0, **base
    )


@pytest.mark.parametrize(
    "series,step,interval,expected",
    [
        pytest.param([1, 2, 3, 100, 100], 1, 2, 200, id="last-two-seconds"),
        pytest.param([60, 60], 15, 10, 600, id="coarse-samples-scaled-to-the-interval"),
        pytest.param([100] * 5, 1, 0, 0, id="no-checkpoint-replay"),
        pytest.param([], 1, 10, 0, id="no-history"),
        pytest.param([100, 100], 1, 10, 1000, id="short-history-extrapolated-at-its-rate"),
    ],
)
def test_replay_backlog(series, step, interval, expected):
    assert replay_backlog_records(series, step_s=step, checkpoint_interval_s=interval) == pytest.approx(expected)
