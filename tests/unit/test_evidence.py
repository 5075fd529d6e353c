"""Typed evidence: rendered to the same decision-log fields and stored rows as the string-keyed dict it replaced,
and read back from them unchanged."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from daedalus_spark.domain import Actuation, CapacityTable, Decision, Outcome, Reason
from daedalus_spark.evidence import Evidence, SkipEvidence, TargetEvidence, TickEvidence
from daedalus_spark.knowledge.state import decision_from_json, decision_to_json
from daedalus_spark.loop import StepResult
from daedalus_spark.plan.budget import RescaleBudget
from daedalus_spark.plan.registry import PLANNERS
from daedalus_spark.runtime.publishers import ControllerMetrics
from tests.unit.plan_cases import COST_CASES, COST_SETTINGS, HORIZON_CASES, HORIZON_SETTINGS, PAPER_CASES

ROWS = [json.loads(line) for line in (Path(__file__).parents[1] / "data" / "decision_rows_v1.jsonl").open()]


def _decisions() -> dict[str, Decision]:
    """Every planner over the planner tests' cases, named as in the stored rows."""
    out = {}
    tables = {  # named as the planner tests that run them
        "test_plan": (PAPER_CASES, None),  # each case carries its settings
        "test_plan_cost": (COST_CASES, COST_SETTINGS),
        "test_plan_horizon": (HORIZON_CASES, HORIZON_SETTINGS),
    }
    for table, (cases, shared) in tables.items():
        for case in cases:
            settings = case.values[1] if shared is None else shared
            # the case's tokens, at the rate its settings name (as the controller builds the budget)
            budget = RescaleBudget(settings.max_rescales_per_hour, case.values[0].budget.tokens)
            inputs = replace(case.values[0], budget=budget)
            for name in sorted(PLANNERS):
                out[f"{table}/{case.id}/{name}"] = PLANNERS[name](inputs, settings)
    return out


def test_the_rows_cover_every_evidence_group():
    keys = {k for r in ROWS for k in json.loads(r["row"])["evidence"]}
    assert {"since_rescale_s", "predicted_recovery_s", "cost_model", "rescale_tokens", "plan_scaleouts"} <= keys
    assert {"batch_ratio", "forecast_next_loop_max_per_s", "plan_load_max_per_s", "forecast_bound"} <= keys


def test_every_planner_stores_the_rows_the_string_keyed_evidence_stored():
    decisions = _decisions()
    assert sorted(decisions) == sorted(r["id"] for r in ROWS)
    for r in ROWS:
        assert decision_to_json(decisions[r["id"]]) == r["row"], r["id"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_a_stored_row_reads_back_typed_and_stores_unchanged(row):
    decision = decision_from_json(row["row"])
    assert decision.evidence.other == {}  # every key found its typed field
    assert decision.evidence.tick is not None
    assert decision_to_json(decision) == row["row"]


def test_a_group_renders_its_none_fields_and_leaves_out_unset_optional_ones():
    tick = TickEvidence(1.0, 2.0, "arima", 3.0, 4.0, 0.0, since_rescale_s=None)
    assert Evidence(tick=tick).fields() == {
        "workload_avg_per_s": 1.0,
        "forecast_max_per_s": 2.0,
        "forecast_model": "arima",
        "capacity_current_per_s": 3.0,
        "capacity_catch_up_per_s": 4.0,
        "consumer_lag_records": 0.0,
        "since_rescale_s": None,
    }
    assert Evidence(skip=SkipEvidence(problem="no data", monitor_error="")).fields() == {
        "problem": "no data",
        "monitor_error": "",
    }
    assert Evidence().fields() == {}


@pytest.mark.parametrize(
    "fields,typed,other",
    [
        pytest.param({"uptime_s": 12.0}, Evidence(skip=SkipEvidence(uptime_s=12.0)), {}, id="skip"),
        pytest.param({"future_key": 1, "planner": "x"}, Evidence(planner="x"), {"future_key": 1}, id="unknown-key"),
        pytest.param(  # a group with a field of the wrong type is not read as that group: its keys stay as they are
            {"capacity_target_per_s": "fast", "predicted_recovery_s": 1.0, "downtime_used_s": 2.0},
            Evidence(),
            {"capacity_target_per_s": "fast", "predicted_recovery_s": 1.0, "downtime_used_s": 2.0},
            id="mistyped-group",
        ),
        pytest.param(  # a partial group likewise
            {"predicted_recovery_s": math.inf}, Evidence(), {"predicted_recovery_s": math.inf}, id="partial-group"
        ),
        pytest.param(
            {"capacity_target_per_s": 5, "predicted_recovery_s": math.inf, "downtime_used_s": 2.0},
            Evidence(target=TargetEvidence(5, math.inf, 2.0)),
            {},
            id="target",
        ),
    ],
)
def test_fields_read_back_into_their_groups(fields, typed, other):
    evidence = Evidence.from_fields(fields)
    assert evidence == Evidence(**{**typed.__dict__, "other": other})
    assert evidence.fields() == fields


def test_the_outcome_is_stored_as_its_value_and_read_back_as_the_enum():
    actuation = Actuation(3, Outcome.UNCONFIRMED, "2 live after 90 s", live=2, duration_s=90.0)
    decision = Decision(5.0, 2, 3, Reason.SCALE_OUT_SMALLEST_VALID, actuation=actuation)
    row = decision_to_json(decision)
    assert json.loads(row)["actuation"] == "unconfirmed" and json.loads(row)["actuation_detail"] == "2 live after 90 s"
    # the store keeps the outcome and its detail; the live count and the duration are the decision log's
    assert decision_from_json(row).actuation == Actuation(3, Outcome.UNCONFIRMED, "2 live after 90 s")


def test_a_tick_gauge_has_no_sample_before_a_tick_sets_it():
    metrics = ControllerMetrics()
    value = metrics.registry.get_sample_value
    late = ("scaleout_current", "scaleout_target", "workload_records_per_second", "consumer_lag_records")
    late += ("capacity_current_records_per_second", "forecast_peak_records_per_second")
    late += ("last_good_tick_timestamp_seconds", "recovery_target_seconds")
    assert {name: value(f"daedalus_controller_{name}") for name in late} == dict.fromkeys(late)
    assert value("daedalus_controller_decisions_total", {"reason": "skip_missing_data"}) == 0.0  # counters: 0 is true
    decision = Decision(5.0, 2, 3, Reason.SCALE_OUT_SMALLEST_VALID, Evidence())
    metrics.publish(StepResult(5.0, decision, None, None))
    assert (value("daedalus_controller_scaleout_current"), value("daedalus_controller_scaleout_target")) == (2, 3)
    assert value("daedalus_controller_last_good_tick_timestamp_seconds") == 5.0
    assert value("daedalus_controller_workload_records_per_second") is None  # no tick evidence: still none


def test_the_metrics_read_the_step_result_alone():
    """No controller handed to the metrics: the tick's gauges come from the decision's evidence, the capacity
    gauges from StepResult.capacities."""
    tick = TickEvidence(1200.0, 1500.0, "arima", 1000.0, 1100.0, 42.0, since_rescale_s=None)
    decision = Decision(5.0, 2, 2, Reason.CURRENT_IS_SMALLEST_VALID, Evidence(tick=tick))
    table = CapacityTable(2, 1000.0, (500.0, 1000.0, 1400.0), frozenset({2}), ())
    metrics = ControllerMetrics()
    metrics.publish(StepResult(5.0, decision, None, None, capacities=table))
    value = metrics.registry.get_sample_value
    assert value("daedalus_controller_workload_records_per_second") == 1200.0
    assert value("daedalus_controller_consumer_lag_records") == 42.0
    assert value("daedalus_controller_forecast_model_info", {"model": "arima"}) == 1.0
    assert value("daedalus_controller_capacity_current_records_per_second") == 1000.0
    assert value("daedalus_controller_capacity_records_per_second", {"scaleout": "3", "observed": "false"}) == 1400.0
