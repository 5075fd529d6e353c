"""Algorithm 1 as a table: one case per branch, each with an id and the numbers that decide it."""

import pytest

from daedalus_spark.domain import Reason
from daedalus_spark.plan.algorithm import plan
from tests.unit.plan_cases import PAPER_CASES as CASES
from tests.unit.plan_cases import PAPER_SETTINGS as SETTINGS
from tests.unit.plan_inputs import plan_inputs as inputs


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
    controller_only = {  # test_controller.py
        Reason.SCALE_IN_AFTER_GAP,
        Reason.SCALE_IN_DURING_RECOVERY,
        Reason.WAITING_FOR_PARTITION_COUNT,
    }
    planner_reasons = set(Reason) - skips - controller_only - cost_aware_only - horizon_only - batch_ratio_only
    assert planner_reasons <= covered


def test_decision_explains_rejected_scaleouts_and_the_chosen_numbers():
    decision = plan(inputs(workload=450), SETTINGS)
    assert decision.notes[0].startswith("1: capacity 100/s not above the average workload 450/s")
    assert len(decision.notes) == 4  # 1..4 rejected, 5 chosen
    assert decision.evidence.target.capacity_target_per_s == 500
    assert 30 < decision.evidence.target.predicted_recovery_s <= 600
