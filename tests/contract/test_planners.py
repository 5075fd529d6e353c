"""Contract: every registered planner returns, for the tick it was given, a Decision within the bounds with a reason
and the evidence every decision carries; the same again for the same inputs; no rescale on missing data; a load
provisioned per forecast step at or above the point forecast; and a name the config accepts."""

import math

import pytest

from daedalus_spark.config import ConfigError, ControllerConfig, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Decision, Forecast, Observation, Reason
from daedalus_spark.plan.registry import PLANNERS, UnknownPlannerError, planner_named
from tests.conftest import observation
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
NAMES = sorted(PLANNERS)


@pytest.mark.parametrize("planner", NAMES)
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


@pytest.mark.parametrize("planner", NAMES)
@pytest.mark.parametrize("plan_inputs", SITUATIONS)
def test_the_same_inputs_give_the_same_decision(planner, plan_inputs):
    settings = ControllerConfig(max_scaleout=12, planner=planner)
    assert PLANNERS[planner](plan_inputs, settings) == PLANNERS[planner](plan_inputs, settings)


def _nan_workload() -> Observation:
    return observation(workload=[1000.0] * 59 + [math.nan])


def _partial() -> Observation:  # metrics for one executor of a scale-out of 3
    return observation(scaleout=3)


def _negative_lag() -> Observation:
    return observation(lag=-5.0)


def _no_samples() -> Observation:
    return observation(workload=[], executors={"w1": ([], [])})


@pytest.mark.parametrize("planner", NAMES)
@pytest.mark.parametrize("missing", [_nan_workload, _partial, _negative_lag, _no_samples], ids=lambda f: f.__name__)
def test_no_planner_rescales_on_missing_data(planner, missing):
    obs = missing()
    controller = Controller(parse_config({"controller": {"planner": planner}}))
    decision = controller.tick(obs, obs.time_s)
    assert decision.reason is Reason.SKIP_MISSING_DATA and not decision.rescale
    assert decision.evidence.skip is not None and decision.evidence.skip.problem


@pytest.mark.parametrize("planner", NAMES)
def test_a_planner_provisions_one_value_per_step_at_or_above_the_point(planner):
    forecast = Forecast(NOW, 10.0, (300.0, 500.0, 400.0), "arima", (450.0, 800.0, 600.0))
    settings = ControllerConfig(planner=planner)
    provisioned = planner_named(planner).provisions(forecast, settings)
    assert len(provisioned) == len(forecast.values_per_s)
    assert all(p >= v for p, v in zip(provisioned, forecast.values_per_s, strict=True))


@pytest.mark.parametrize("planner", NAMES)
def test_the_config_accepts_every_registered_planner(planner):
    assert parse_config({"controller": {"planner": planner}}).controller.planner == planner


def test_the_config_refuses_a_planner_no_entry_names():
    with pytest.raises(ConfigError, match=r"controller\.planner: unknown planner 'horizn' \(one of .*horizon"):
        parse_config({"controller": {"planner": "horizn"}})
    with pytest.raises(UnknownPlannerError, match="unknown planner 'horizn'"):
        planner_named("horizn")
