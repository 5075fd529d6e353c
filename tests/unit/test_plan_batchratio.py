"""Table tests: the batch-duration rule as the loop's `batch_ratio` planner, against hand-computed rounds."""

from dataclasses import replace

import pytest

from daedalus_spark.config import ControllerConfig
from daedalus_spark.domain import Reason
from daedalus_spark.plan.batchratio import plan_batch_ratio, window_ratio
from tests.unit.plan_inputs import plan_inputs

SETTINGS = ControllerConfig(min_scaleout=1, max_scaleout=6, loop_interval_s=60)


@pytest.mark.parametrize(
    ("current", "batches", "seconds", "trigger_s", "target", "reason"),
    [
        # 20 batches of 0.95 s against a 1-s trigger: ratio 0.95 >= 0.9, round(0.95) = 1 more
        pytest.param(3, 20, 19.0, 1.0, 4, Reason.BATCH_RATIO_SCALES_OUT, id="up-by-one"),
        # 10 batches of 2.6 s: ratio 2.6 rounds to 3 more
        pytest.param(2, 10, 26.0, 1.0, 5, Reason.BATCH_RATIO_SCALES_OUT, id="up-by-round-ratio"),
        # ratio 2.5 rounds half up (Scala's math.round): 3 more, capped at max 6
        pytest.param(5, 4, 10.0, 1.0, 6, Reason.BATCH_RATIO_SCALES_OUT, id="up-capped-at-max"),
        pytest.param(6, 10, 15.0, 1.0, 6, Reason.BATCH_RATIO_HOLDS, id="at-max-stays"),
        # ratio exactly 0.3 scales in by one
        pytest.param(4, 60, 18.0, 1.0, 3, Reason.BATCH_RATIO_SCALES_IN, id="down-at-ratio"),
        pytest.param(1, 60, 6.0, 1.0, 1, Reason.BATCH_RATIO_HOLDS, id="down-floored-at-min"),
        pytest.param(4, 30, 15.0, 1.0, 4, Reason.BATCH_RATIO_HOLDS, id="between-ratios"),
        # a 2-s trigger halves the ratio: 1.9 s per batch is 0.95
        pytest.param(2, 10, 19.0, 2.0, 3, Reason.BATCH_RATIO_SCALES_OUT, id="trigger-scales-ratio"),
        pytest.param(3, 0, 0.0, 1.0, 3, Reason.BATCH_RATIO_HOLDS, id="no-batch-nothing"),
        pytest.param(3, 20, 19.0, 0.0, 3, Reason.BATCH_RATIO_HOLDS, id="unknown-trigger-nothing"),
    ],
)
def test_one_round_of_the_rule(current, batches, seconds, trigger_s, target, reason):
    inputs = replace(
        plan_inputs(current=current, max_n=6),
        batches_completed=float(batches),
        batch_seconds=seconds,
        trigger_interval_s=trigger_s,
    )
    decision = plan_batch_ratio(inputs, SETTINGS)
    assert (decision.target_scaleout, decision.reason) == (target, reason)
    assert decision.evidence.batches.batches_completed == batches
    if decision.rescale:
        assert decision.evidence.target is not None


def test_the_rule_ignores_cool_down_budget_and_lag_like_spark():
    inputs = replace(
        plan_inputs(current=2, max_n=6, since_rescale=1, tokens=0.0, lag=1e9),
        batches_completed=5.0,
        batch_seconds=0.5,
        trigger_interval_s=1.0,
    )
    assert plan_batch_ratio(inputs, SETTINGS).target_scaleout == 1  # ratio 0.1: one fewer, lag or not


@pytest.mark.parametrize(
    ("batches", "seconds", "ratio"),
    [
        pytest.param(3, 1.0, 0.333, id="integer-ms-mean"),  # 1000 ms // 3 = 333 ms
        pytest.param(2.9999999, 3.0004, 1.0, id="counter-rates-rounded"),  # rate x step sums land off integers
        pytest.param(0.4, 2.0, None, id="below-one-batch"),
        pytest.param(float("nan"), 2.0, None, id="nan"),
    ],
)
def test_window_ratio(batches, seconds, ratio):
    assert window_ratio(batches, seconds, 1.0) == ratio
