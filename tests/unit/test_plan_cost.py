"""The cost-aware planner as a table: one case per branch it adds to Algorithm 1, and never less safe than it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daedalus_spark.config import ControllerConfig
from daedalus_spark.domain import Reason
from daedalus_spark.plan.algorithm import plan
from daedalus_spark.plan.cost import plan_cost_aware
from tests.unit.plan_inputs import plan_inputs as inputs

SETTINGS = ControllerConfig(max_scaleout=12, target_recovery_s=600, checkpoint_interval_s=10, planner="cost_aware")

CASES = [
    # Point forecast 340/s fits 4 executors (400/s); its upper bound 450/s does not.
    pytest.param(
        inputs(workload=300, forecast=[340] * 90, upper=[450] * 90),
        4,
        5,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="upper-bound-scales-out-where-the-point-forecast-holds",
    ),
    pytest.param(inputs(workload=450), 4, 5, Reason.SCALE_OUT_SMALLEST_VALID, id="scale-out-as-paper"),
    pytest.param(inputs(workload=300, forecast=[340] * 90), 4, 4, Reason.CURRENT_IS_SMALLEST_VALID, id="hold-as-paper"),
    # 4 -> 2 saves 2 * 900 = 1800 executor-s; costs 15 s * 4 + (1500 + 2250) records / 100 per s = 97.5.
    pytest.param(inputs(workload=150), 4, 2, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in-that-pays"),
    # The upper bound (not the point forecast) decides how far to go: 280/s needs 3 executors.
    pytest.param(
        inputs(workload=150, upper=[280] * 90), 4, 3, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in-to-the-upper-bound"
    ),
    # 12-step (120-s) forecast: it cannot show that 2 executors outlast the 180-s cool-down.
    pytest.param(
        inputs(workload=150, steps=12), 4, 4, Reason.SCALE_IN_UNDONE_WITHIN_COOLDOWN, id="undone-within-cooldown"
    ),
    # 4 -> 3 over a 20-step (200-s) forecast saves 200 executor-s; 40 s down costs 160 + (1500 + 6000) / 100 = 235.
    pytest.param(
        inputs(workload=150, steps=20, downtime_in=40, caps=[100, 160, 300, 400] + [100.0 * n for n in range(5, 13)]),
        4,
        4,
        Reason.SCALE_IN_NOT_WORTH_IT,
        id="scale-in-not-worth-it",
    ),
    # The load rose from 150/s back to 320/s within the lookback: past 2 and 3 executors' capacity.
    pytest.param(
        inputs(workload=150, lookback=[150, 320, 150]), 4, 4, Reason.SCALE_IN_RECENTLY_OUTGROWN, id="recently-outgrown"
    ),
    pytest.param(
        inputs(current=6, workload=150, lookback=[150, 320, 150]),
        6,
        4,
        Reason.SCALE_IN_BEST_NET_SAVING,
        id="scale-in-only-to-what-the-load-did-not-outgrow",
    ),
    # The load came back, but only after 600 s below 200/s: 2 * 600 saved > 97.5 for the scale-in + 165 for the
    # scale-out back (30 s * 4 + 150/s * 30 s / 100 per executor-s).
    pytest.param(
        inputs(workload=150, lookback=[150] * 60 + [320, 150]),
        4,
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="outgrown-after-a-dwell-that-pays",
    ),
    # A fall from 500/s is a downslope, not a load that comes back.
    pytest.param(
        inputs(current=6, workload=150, lookback=[500, 400, 300, 150]),
        6,
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="downslope-scales-in",
    ),
    pytest.param(
        inputs(workload=2000, since_rescale=100), 4, 4, Reason.COOLDOWN, id="cooldown-as-paper-even-if-overloaded"
    ),
    # The rescale budget holds scale-ins only: a scale-in waits for a whole token, a scale-out goes even in debt.
    pytest.param(
        inputs(workload=150, tokens=0.99), 4, 4, Reason.SCALE_IN_RESCALE_BUDGET, id="scale-in-waits-for-a-token"
    ),
    pytest.param(inputs(workload=150, tokens=1.0), 4, 2, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in-with-a-token"),
    pytest.param(
        inputs(workload=450, tokens=-2.0), 4, 5, Reason.SCALE_OUT_SMALLEST_VALID, id="scale-out-never-waits-for-budget"
    ),
]


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
