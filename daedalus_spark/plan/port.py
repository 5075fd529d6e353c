"""Plan port: what every planner is given (PlanInputs, and the tick it may read more from) and what it offers the
controller — a Decision with its reason, and the load it provisions for; plan/registry.py names them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

from daedalus_spark.config import Config, ControllerConfig
from daedalus_spark.domain import CapacityTable, Decision, Forecast, Observation
from daedalus_spark.plan.budget import RescaleBudget


@dataclass(frozen=True)
class PlanInputs:
    """What every planner reads, already analyzed (a planner's own inputs extend them: plan/cost.py,
    plan/batchratio.py)."""

    now_s: float
    current_scaleout: int
    capacities: CapacityTable
    workload_avg_per_s: float
    replay_records: float  # what a restart replays from the last checkpoint (analyze.recovery_prediction)
    forecast: Forecast
    consumer_lag_records: float
    last_rescale_s: float | None
    downtime_scale_out_s: float
    downtime_scale_in_s: float
    # After a scale-out's downtime, this long at the old capacity plus this share of what it adds (config recovery)
    warmup_scale_out_s: float = 0.0
    warmup_capacity_ratio: float = 1.0
    budget: RescaleBudget = field(default_factory=RescaleBudget)  # built once per tick (plan/budget.py)
    # The scale-out our last rescale asked for (None: none remembered); above the current one while it is on its way.
    last_target: int | None = None

    def extended(self, planner_inputs: type[Extended], **only_it_reads: Any) -> Extended:
        """These inputs as a planner's own (a subclass), with what that planner alone reads."""
        return planner_inputs(**{f.name: getattr(self, f.name) for f in fields(PlanInputs)}, **only_it_reads)


Extended = TypeVar("Extended", bound=PlanInputs)


@dataclass(frozen=True)
class TickContext:
    """What the tick saw beyond PlanInputs, for a planner that reads more: the observation, the configuration, and
    the observed workload remembered (time, records/s per forecast-resolution step, oldest first)."""

    observation: Observation
    config: Config
    workload_history: Sequence[tuple[float, float]]


def shared_only(inputs: PlanInputs, tick: TickContext) -> PlanInputs:
    """The inputs of a planner that reads nothing beyond PlanInputs."""
    return inputs


def point_forecast(forecast: Forecast, settings: ControllerConfig) -> tuple[float, ...]:
    """The load a planner provisions for when it plans on the point forecast (or reads none)."""
    return forecast.values_per_s


@dataclass(frozen=True)
class Planner(Generic[Extended]):
    """A planner: `decide` on its inputs, which `inputs` builds from the tick's shared ones; `provisions` says the
    load per forecast step it plans for (the knowledge report shows it beside the forecast)."""

    decide: Callable[[Extended, ControllerConfig], Decision]
    inputs: Callable[[PlanInputs, TickContext], Extended]
    provisions: Callable[[Forecast, ControllerConfig], tuple[float, ...]] = point_forecast

    def __call__(self, inputs: Extended, settings: ControllerConfig) -> Decision:
        return self.decide(inputs, settings)

    def plan(self, inputs: PlanInputs, tick: TickContext) -> Decision:
        """The tick's decision: its own inputs from the shared ones and the tick, then `decide`."""
        return self.decide(self.inputs(inputs, tick), tick.config.controller)
