"""Test builder: the analyzed inputs of one planning step, with defaults the planner table tests vary one at a time."""

from dataclasses import dataclass

from daedalus_spark.analyze.recovery_prediction import replay_backlog_records
from daedalus_spark.domain import CapacityTable, Forecast
from daedalus_spark.plan.batchratio import BatchRatioInputs
from daedalus_spark.plan.budget import RescaleBudget
from daedalus_spark.plan.cost import CostAwareInputs

NOW = 10_000.0


@dataclass(frozen=True)
class AnyPlannerInputs(CostAwareInputs, BatchRatioInputs):
    """Inputs every planner accepts (each reads its own part), so one situation can be planned by all."""


def plan_inputs(
    *,
    current=4,
    per_executor=100.0,
    max_n=12,
    caps=None,
    workload=250.0,
    forecast=None,
    upper=None,
    steps=90,
    lag=0.0,
    since_rescale=None,
    lookback=(),
    downtime_out=30.0,
    downtime_in=15.0,
    tokens=float("inf"),
    per_hour=3.0,
    checkpoint_s=10.0,
):
    """Capacities `per_executor * n` for n = 1..max_n (or `caps`), a flat forecast at `workload` over `steps` 10-s
    buckets (or `forecast`, with `upper` as its upper bound), observed at the current scale-out only; a restart
    replays `checkpoint_s` of the workload; the rescale budget holds `tokens` of `per_hour`."""
    caps = tuple(caps) if caps is not None else tuple(per_executor * n for n in range(1, max_n + 1))
    table = CapacityTable(current, caps[current - 1], caps, frozenset({current}), ())
    values = forecast if forecast is not None else [workload] * steps
    return AnyPlannerInputs(
        now_s=NOW,
        current_scaleout=current,
        capacities=table,
        workload_avg_per_s=workload,
        replay_records=replay_backlog_records((workload,) * 60, step_s=1.0, checkpoint_interval_s=checkpoint_s),
        forecast=Forecast(NOW, 10.0, tuple(float(v) for v in values), "arima", tuple(float(v) for v in upper or ())),
        consumer_lag_records=lag,
        last_rescale_s=None if since_rescale is None else NOW - since_rescale,
        downtime_scale_out_s=downtime_out,
        downtime_scale_in_s=downtime_in,
        lookback_workload_per_s=tuple(float(v) for v in lookback),
        budget=RescaleBudget(per_hour, tokens),
    )
