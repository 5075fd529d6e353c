"""Algorithm 1 as a table: one case per branch, each with an id and the numbers that decide it."""

import pytest

from daedalus_spark.config import ControllerConfig
from daedalus_spark.domain import Reason
from daedalus_spark.plan.algorithm import plan
from tests.unit.plan_inputs import plan_inputs as inputs

SETTINGS = ControllerConfig(max_scaleout=12, target_recovery_s=600, checkpoint_interval_s=10)
PAPER_LAG_RULE = SETTINGS.model_copy(update={"scale_in_lag_s": 1})  # capacity below the lag defers a scale-in

CASES = [
    pytest.param(
        inputs(since_rescale=100, workload=2000), SETTINGS, 4, Reason.COOLDOWN, id="cooldown-holds-even-if-overloaded"
    ),
    pytest.param(
        inputs(since_rescale=300, workload=350),
        SETTINGS,
        4,
        Reason.RECENT_RESCALE_STILL_FINE,
        id="recent-rescale-still-fine",
    ),
    pytest.param(
        inputs(since_rescale=300, workload=450),
        SETTINGS,
        5,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="recent-rescale-no-longer-fine",
    ),
    pytest.param(
        inputs(since_rescale=300, workload=350, forecast=[350] * 6 + [500] * 84),
        SETTINGS,
        4,
        Reason.RECENT_RESCALE_STILL_FINE,
        id="recent-rescale-ignores-peaks-after-next-loop",
    ),
    pytest.param(
        inputs(workload=300, forecast=[340] * 90),
        SETTINGS,
        4,
        Reason.CURRENT_IS_SMALLEST_VALID,
        id="current-is-smallest-valid",
    ),
    pytest.param(inputs(workload=450), SETTINGS, 5, Reason.SCALE_OUT_SMALLEST_VALID, id="scale-out"),
    pytest.param(inputs(workload=150), SETTINGS, 2, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in"),
    pytest.param(
        inputs(workload=150, lag=250),
        PAPER_LAG_RULE,
        3,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="paper-lag-rule-skips-the-smallest-scale-in",
    ),
    pytest.param(
        inputs(workload=150, lag=1000),
        PAPER_LAG_RULE,
        4,
        Reason.SCALE_IN_DEFERRED_LAG,
        id="paper-lag-rule-defers-the-scale-in",
    ),
    # The default: lag up to 60 s of the smaller scale-out's capacity is a micro-batch's own, not a backlog.
    pytest.param(
        inputs(workload=150, lag=1000), SETTINGS, 2, Reason.SCALE_IN_SMALLEST_VALID, id="batch-sized-lag-does-not-defer"
    ),
    pytest.param(
        inputs(workload=150, lag=20000), SETTINGS, 4, Reason.SCALE_IN_DEFERRED_LAG, id="backlog-defers-the-scale-in"
    ),
    pytest.param(inputs(workload=5000), SETTINGS, 12, Reason.NO_VALID_SCALEOUT_USE_MAX, id="no-valid-use-max"),
    pytest.param(
        inputs(current=2, workload=250, forecast=[250] * 30 + [650] * 60),
        SETTINGS,
        7,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="scale-out-for-the-forecast-peak",
    ),
    pytest.param(
        inputs(workload=150, forecast=[150] * 60 + [390] * 30),
        SETTINGS,
        4,
        Reason.CURRENT_IS_SMALLEST_VALID,
        id="no-scale-in-below-the-forecast-peak",
    ),
    # Paper: the current scale-out is kept when valid even if the full forecast peak exceeds it (checked later).
    pytest.param(
        inputs(workload=250, forecast=[250] * 30 + [650] * 60),
        SETTINGS,
        4,
        Reason.CURRENT_IS_SMALLEST_VALID,
        id="current-kept-until-the-peak-nears",
    ),
    # 3 executors: 50/s headroom for 2500 replay + 7500 during 30 s down + 30000 lag = 800 s > 600 s;
    # 4 executors: 297 s.
    pytest.param(
        inputs(current=2, workload=250, lag=30000),
        SETTINGS,
        4,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="recovery-target-rules-out-small-scaleouts",
    ),
    pytest.param(
        inputs(workload=10),
        SETTINGS.model_copy(update={"min_scaleout": 3}),
        3,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="min-scaleout-respected",
    ),
    pytest.param(
        inputs(current=12, workload=150),
        SETTINGS.model_copy(update={"max_scaleout": 8}),
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="current-above-max-still-scales-to-smallest",
    ),
    pytest.param(
        inputs(workload=5000),
        SETTINGS.model_copy(update={"max_scaleout": 8}),
        8,
        Reason.NO_VALID_SCALEOUT_USE_MAX,
        id="max-scaleout-respected",
    ),
    pytest.param(
        inputs(workload=250, downtime_out=2000),
        SETTINGS,
        3,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="keeping-current-judged-as-failure-restart",
    ),
]


@pytest.mark.parametrize("plan_inputs,settings,target,reason", CASES)
def test_algorithm_1(plan_inputs, settings, target, reason):
    decision = plan(plan_inputs, settings)
    assert (decision.target_scaleout, decision.reason) == (target, reason), decision.notes
    assert decision.current_scaleout == plan_inputs.current_scaleout
    assert decision.evidence.tick.workload_avg_per_s == plan_inputs.workload_avg_per_s


def test_every_reason_of_the_planner_is_covered_by_the_table():
    covered = {case.values[3] for case in CASES}
    cost_aware_only = {  # tests/unit/test_plan_cost.py
        Reason.SCALE_IN_RECENTLY_OUTGROWN,
        Reason.SCALE_IN_UNDONE_WITHIN_COOLDOWN,
        Reason.SCALE_IN_NOT_WORTH_IT,
        Reason.SCALE_IN_BEST_NET_SAVING,
        Reason.SCALE_IN_RESCALE_BUDGET,
    }
    horizon_only = {Reason.PLAN_HOLDS, Reason.PLAN_SCALES_OUT, Reason.PLAN_SCALES_IN}  # test_plan_horizon.py
    batch_ratio_only = {  # test_plan_batchratio.py
        Reason.BATCH_RATIO_HOLDS,
        Reason.BATCH_RATIO_SCALES_OUT,
        Reason.BATCH_RATIO_SCALES_IN,
    }
    skips = {Reason.SKIP_MISSING_DATA, Reason.SKIP_WARMUP}
    planner_reasons = set(Reason) - skips - cost_aware_only - horizon_only - batch_ratio_only
    assert planner_reasons <= covered


def test_decision_explains_rejected_scaleouts_and_the_chosen_numbers():
    decision = plan(inputs(workload=450), SETTINGS)
    assert decision.notes[0].startswith("1: capacity 100/s not above the average workload 450/s")
    assert len(decision.notes) == 4  # 1..4 rejected, 5 chosen
    assert decision.evidence.target.capacity_target_per_s == 500
    assert 30 < decision.evidence.target.predicted_recovery_s <= 600
