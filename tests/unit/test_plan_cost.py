"""The cost-aware planner as a table: one case per branch it adds to Algorithm 1, and never less safe than it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daedalus_spark.domain import Reason
from daedalus_spark.plan.algorithm import plan
from daedalus_spark.plan.cost import plan_cost_aware
from tests.unit.plan_cases import COST_CASES as CASES
from tests.unit.plan_cases import COST_SETTINGS as SETTINGS
from tests.unit.plan_inputs import plan_inputs as inputs


@pytest.mark.parametrize("plan_inputs,current,target,reason", CASES)
def test_cost_aware(plan_inputs, current, target, reason):
    decision = plan_cost_aware(plan_inputs, SETTINGS)
    assert (decision.current_scaleout, decision.target_scaleout, decision.reason) == (current, target, reason), (
        decision.notes,
        decision.evidence,
    )
    assert decision.evidence.planner == "cost_aware"


def test_every_cost_aware_reason_is_covered_by_the_table():
    covered = {case.values[3] for case in CASES}
    assert {
        Reason.SCALE_IN_RECENTLY_OUTGROWN,
        Reason.SCALE_IN_UNDONE_WITHIN_COOLDOWN,
        Reason.SCALE_IN_NOT_WORTH_IT,
        Reason.SCALE_IN_BEST_NET_SAVING,
        Reason.SCALE_IN_RESCALE_BUDGET,
    } <= covered


def test_held_scale_in_explains_its_cost():
    decision = plan_cost_aware(CASES[6].values[0], SETTINGS)
    e = decision.evidence.cost_aware.scale_in
    assert (e.scale_in_target, e.hold_s, e.saved_executor_s) == (3, 200.0, 200.0)
    assert (e.downtime_executor_s, e.catch_up_executor_s, e.cost_executor_s) == (160.0, 75.0, 235.0)
    assert "cost" in e.cost_model and decision.notes[-1] == "3: saves 200 executor-s over 200 s, costs 235"


def test_scale_in_that_pays_carries_its_numbers():
    e = plan_cost_aware(inputs(workload=150), SETTINGS).evidence.cost_aware
    assert (e.scale_in.saved_executor_s, e.scale_in.cost_executor_s, e.forecast_bound) == (1800.0, 97.5, "point")


@settings(max_examples=200, deadline=None)
@given(
    current=st.integers(1, 12),
    workload=st.floats(0, 1500),
    level=st.lists(st.floats(0, 1500), min_size=1, max_size=90),
    widen=st.lists(st.floats(0, 500), min_size=90, max_size=90),
    lag=st.floats(0, 50_000),
    lookback=st.lists(st.floats(0, 1500), max_size=90),
    per_executor=st.lists(st.floats(50, 150), min_size=12, max_size=12),
    tokens=st.floats(-5, 5),
)
def test_never_less_safe_than_paper(current, workload, level, widen, lag, lookback, per_executor, tokens):
    """When Algorithm 1 scales out, cost_aware scales out at least as far (it sees the same or a higher forecast)."""
    caps = [sum(per_executor[:n]) for n in range(1, 13)]
    upper = [v + w for v, w in zip(level, widen, strict=False)]
    args = {"current": current, "caps": caps, "workload": workload, "forecast": level, "lag": lag, "lookback": lookback}
    paper = plan(inputs(**args), SETTINGS)
    cost_aware = plan_cost_aware(inputs(**args, upper=upper, tokens=tokens), SETTINGS)
    if paper.target_scaleout >= paper.current_scaleout:  # a scale-out, or a hold that Algorithm 1 needs
        assert cost_aware.target_scaleout >= paper.target_scaleout
