"""Measured recovery (§3.5) on the paper's rescale measurements and on hand-made series."""

import pytest

from daedalus_spark.analyze.recovery_measurement import NO_ANOMALY_GRACE_S, Executors, PendingRecovery, RecoveryMeter
from daedalus_spark.config import RecoveryConfig
from daedalus_spark.monitor.files import read_metric_csv
from tests.conftest import MEASUREMENTS

RESCALE_S = 349  # the measured throughput drops to zero at second 350


def measured_series():
    w = read_metric_csv(MEASUREMENTS / "anomaly_detection_workload.csv")
    t = read_metric_csv(MEASUREMENTS / "anomaly_detect_throughput.csv")
    workload = dict(zip(map(int, w.times), next(iter(w.columns.values())), strict=False))
    throughput = dict(zip(map(int, t.times), next(iter(t.columns.values())), strict=False))
    seconds = sorted(set(workload) & set(throughput))
    return [(s, workload[s], throughput[s]) for s in seconds]


def pending(at_s, predicted=100.0, downtime=30.0, direction="out"):
    return PendingRecovery(at_s, direction, 2, 3 if direction == "out" else 1, predicted, downtime)


def steady(monitor, seconds, rate=1000.0):
    """Normal operation: throughput equals the workload."""
    for i in range(seconds):
        monitor.feed(i, rate, rate)


def recovery_after(monitor, start_s, throughput_at, until_s=400, workload=1000.0):
    """Feed from `start_s` until a recovery is measured (None if none by `until_s`)."""
    for i in range(start_s, until_s):
        result = monitor.feed(i, workload, throughput_at(i))
        if result:
            return result
    return None


def test_recovery_measured_on_the_paper_data_ends_when_throughput_settles():
    monitor = RecoveryMeter(RecoveryConfig())
    result = None
    for s, w, t in measured_series():
        if s == RESCALE_S:
            monitor.start(pending(s))
        result = monitor.feed(s, w, t) or result
        if result:
            break
    # Throughput is 0 for ~10 s, catches up above the workload, and is back to its normal gap by ~418 s.
    assert result is not None
    assert 60 <= result.recovery_s <= 80


def test_downtime_estimate_moves_towards_what_the_recovery_implies():
    config = RecoveryConfig(initial_downtime_scale_out_s=30, downtime_learning_ratio=0.5)
    monitor = RecoveryMeter(config)
    for i in range(200):
        monitor.feed(i, 1000.0, 1000.0 + (i % 3 - 1) * 5)
    # Predicted 60 s with 30 s of downtime; the stream took 100 s, 5/3 of that: at the capacity and load believed,
    # a recovery grows with the downtime, so the downtime was 50 s.
    monitor.start(pending(200, predicted=60, downtime=30))
    result = recovery_after(monitor, 200, lambda i: 0.0 if i < 260 else (1500.0 if i < 300 else 1000.0))
    assert result is not None and result.recovery_s == 100
    assert monitor.downtime_scale_out_s == pytest.approx(30 + 0.5 * (50 - 30))
    assert monitor.downtime_scale_in_s == config.initial_downtime_scale_in_s


def test_a_recovery_far_longer_than_predicted_scales_the_downtime_not_adds_to_it():
    """A scale-in onto a nearly saturated scale-out settles slowly: 2,024 s against 631 s predicted with a downtime
    of 7.5 s. Adding the difference made it a 1,400-s downtime (no scale-in was feasible after it); in proportion,
    24 s."""
    monitor = RecoveryMeter(RecoveryConfig(initial_downtime_scale_in_s=7.5, downtime_learning_ratio=1.0))
    steady(monitor, 100)
    monitor.start(pending(100, predicted=631, downtime=7.5, direction="in"))
    result = recovery_after(monitor, 100, lambda i: 900.0 if i < 2124 else 1000.0, until_s=2400)
    assert result is not None and result.recovery_s == 2024
    assert monitor.downtime_scale_in_s == pytest.approx(7.5 * 2024 / 631)


def test_scale_in_corrects_only_the_scale_in_downtime():
    monitor = RecoveryMeter(RecoveryConfig(initial_downtime_scale_in_s=15, downtime_learning_ratio=1.0))
    steady(monitor, 100)
    monitor.start(pending(100, predicted=20, downtime=15, direction="in"))
    result = recovery_after(monitor, 100, lambda i: 0.0 if i < 105 else 1000.0)
    assert result.recovery_s == 5
    # recovered 15 s earlier than predicted: that caps the downtime at the 5 s the whole recovery took, no lower
    assert monitor.downtime_scale_in_s == 5.0
    assert monitor.downtime_scale_out_s == 30


def test_seamless_rescale_measures_zero_after_the_grace_period():
    monitor = RecoveryMeter(RecoveryConfig())
    steady(monitor, 100)
    monitor.start(pending(100))
    results = [monitor.feed(100 + i, 1000.0, 1000.0) for i in range(int(NO_ANOMALY_GRACE_S) + 1)]
    assert [r.recovery_s for r in results if r] == [0.0]


def test_a_recovery_that_never_settles_is_dropped_not_measured():
    monitor = RecoveryMeter(RecoveryConfig(max_recovery_s=120))
    steady(monitor, 100)
    monitor.start(pending(100))
    assert all(monitor.feed(100 + i, 1000.0, 0.0) is None for i in range(200))
    assert monitor.pending is None
    assert monitor.downtime_scale_out_s == 30


def test_half_life_is_in_seconds_whatever_the_sample_step():
    one_s, fifteen_s = RecoveryMeter(RecoveryConfig()), RecoveryMeter(RecoveryConfig())
    for i in range(600):
        one_s.feed(i, 1000.0 if i < 300 else 2000.0, 1000.0)
    for i in range(0, 600, 15):
        fifteen_s.feed(i, 1000.0 if i < 300 else 2000.0, 1000.0, step_s=15.0)
    # Both have forgotten the same share of the first regime after 300 s of the second.
    assert fifteen_s.moments.mean == pytest.approx(one_s.moments.mean, rel=0.02)


def test_a_rescale_during_a_recovery_is_timed_but_does_not_correct_the_downtime():
    monitor = RecoveryMeter(RecoveryConfig(downtime_learning_ratio=1.0))
    steady(monitor, 100)
    monitor.start(pending(100))
    assert recovery_after(monitor, 100, lambda i: 0.0, until_s=110) is None  # still down at the next rescale
    monitor.start(pending(110, predicted=20))
    result = recovery_after(monitor, 110, lambda i: 0.0 if i < 150 else 1000.0)
    assert result.recovery_s == 40
    assert monitor.downtime_scale_out_s == 30  # unchanged: the backlog was partly the first rescale's


# A scale-out 1 -> 3 at 100 s: a blip of lost throughput at 102-104 s, then the old executor keeps up until the new
# ones work at 130 s (registered at 120 s, their first tasks cold until 130 s). Each case: the executors and whether
# the job was behind its latency objective, per second; the recovery measured.
def _live_out(t):
    return Executors(listed=1 if t < 120 else 3, working=1 if t < 130 else 3)


@pytest.mark.parametrize(
    ("executors_at", "behind_until_s", "recovery_s"),
    [
        pytest.param(lambda t: None, 0, 5.0, id="executors-unknown-ends-on-the-quiet-stretch"),
        pytest.param(_live_out, 0, 30.0, id="ends-once-the-joining-executors-work"),
        pytest.param(
            lambda t: Executors(listed=3 if t >= 120 else 1, working=3 if t >= 120 else 1),
            0,
            20.0,
            id="in-place-once-listed-and-working",
        ),
        pytest.param(_live_out, 150, 50.0, id="not-while-behind-the-latency-objective"),
    ],
)
def test_a_recovery_ends_only_once_the_rescale_stands_in_place_and_the_job_is_within_its_objective(
    executors_at, behind_until_s, recovery_s
):
    monitor = RecoveryMeter(RecoveryConfig(stable_samples=5))
    steady(monitor, 100)
    monitor.start(PendingRecovery(100, "out", 1, 3, predicted_recovery_s=40.0, downtime_used_s=30.0))
    result = None
    for t in range(100, 400):
        throughput = 0.0 if 102 <= t < 105 else 1000.0
        result = monitor.feed(t, 1000.0, throughput, executors=executors_at(t), behind=t < behind_until_s)
        if result:
            break
    assert result is not None and result.recovery_s == recovery_s


def test_a_scale_in_stands_in_place_once_its_leavers_are_no_longer_listed():
    leaving = PendingRecovery(100, "in", 3, 1, predicted_recovery_s=10.0, downtime_used_s=6.0)
    assert not leaving.in_place(Executors(listed=2, working=1))
    assert leaving.in_place(Executors(listed=1, working=1))
    assert leaving.in_place(None)


def test_the_seamless_grace_counts_from_when_the_rescale_stood_in_place():
    monitor = RecoveryMeter(RecoveryConfig())
    steady(monitor, 100)
    monitor.start(pending(100))
    results = {
        t: monitor.feed(t, 1000.0, 1000.0, executors=Executors(3 if t >= 140 else 2, 3 if t >= 150 else 2))
        for t in range(100, 300)
    }
    assert [(t, r.recovery_s) for t, r in results.items() if r] == [(150 + int(NO_ANOMALY_GRACE_S), 0.0)]


def test_a_pending_recovery_stored_before_applied_s_existed_loads():
    state = RecoveryMeter(RecoveryConfig(), pending=pending(100)).to_state()
    del state["pending"]["applied_s"]
    assert RecoveryMeter.from_state(RecoveryConfig(), state).pending.applied_s is None
