"""Contract: every planner the config can name returns a Decision for the tick it was given, within the bounds,
with a reason and the evidence every decision carries."""

import pytest

from daedalus_spark.config import ControllerConfig
from daedalus_spark.controller import PLANNERS
from daedalus_spark.domain import Decision, Reason
from tests.unit.plan_inputs import NOW
from tests.unit.plan_inputs import plan_inputs as inputs

SITUATIONS = [
    pytest.param(inputs(workload=250), id="over-provisioned"),
    pytest.param(inputs(workload=450), id="under-provisioned"),
    pytest.param(inputs(workload=390), id="just-fits"),
    pytest.param(inputs(workload=5000), id="above-max"),
    pytest.param(inputs(workload=150, lag=100_000), id="lagging"),
    pytest.param(inputs(workload=150, since_rescale=30), id="just-rescaled"),
    pytest.param(inputs(workload=150, tokens=0.0), id="budget-spent"),
    pytest.param(inputs(workload=300, forecast=[300] * 6 + [700] * 84, upper=[400] * 6 + [900] * 84), id="ramp"),
]
EVIDENCE = {"workload_avg_per_s", "forecast_max_per_s", "capacity_current_per_s", "consumer_lag_records"}


@pytest.mark.parametrize("planner", sorted(PLANNERS))
@pytest.mark.parametrize("plan_inputs", SITUATIONS)
def test_planner_returns_a_bounded_decision_with_reason_and_evidence(planner, plan_inputs):
    settings = ControllerConfig(max_scaleout=12, max_rescales_per_hour=3, planner=planner)
    decision = PLANNERS[planner](plan_inputs, settings)
    assert isinstance(decision, Decision)
    assert isinstance(decision.reason, Reason)
    assert decision.time_s == NOW and decision.current_scaleout == plan_inputs.current_scaleout
    assert settings.min_scaleout <= decision.target_scaleout <= settings.max_scaleout
    assert decision.evidence.fields().keys() >= EVIDENCE
    if decision.rescale and decision.reason is not Reason.NO_VALID_SCALEOUT_USE_MAX:  # max: no prediction holds
        assert decision.evidence.target is not None


def test_the_config_names_every_planner():
    assert set(PLANNERS) == set(ControllerConfig.model_fields["planner"].annotation.__args__)
