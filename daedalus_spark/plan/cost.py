"""Plan: cost-aware planning — Algorithm 1 on the forecast's upper bound, and only scale-ins that pay for themselves."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from daedalus_spark.config import ControllerConfig
from daedalus_spark.domain import Decision, Forecast, Reason
from daedalus_spark.evidence import CostAwareEvidence, ScaleInEvidence
from daedalus_spark.plan.algorithm import plan
from daedalus_spark.plan.port import PlanInputs, Planner, TickContext

COST_MODEL = (
    "saved = (current - n) * hold_s; "
    "cost = downtime_s * current + (replay + arrivals during the downtime) / (capacity(n) / n); "
    "outgrown within the lookback: saved over min(dwell_s, hold_s), minus the scale-out back (undo_executor_s)"
)


@dataclass(frozen=True)
class CostAwareInputs(PlanInputs):
    """Algorithm 1's inputs, and what the cost_aware planner weighs a scale-in with."""

    # Observed workload over the last `scale_in_lookback_s`, oldest first, one average per forecast-resolution step.
    lookback_workload_per_s: tuple[float, ...] = ()
    lookback_step_s: float = 10.0


def cost_aware_inputs(inputs: PlanInputs, tick: TickContext) -> CostAwareInputs:
    """The tick's inputs, and the workload observed over the last `scale_in_lookback_s`."""
    since_s = inputs.now_s - tick.config.controller.cost_aware.scale_in_lookback_s
    return inputs.extended(
        CostAwareInputs,
        lookback_workload_per_s=tuple(value for t, value in tick.workload_history if t > since_s),
        lookback_step_s=tick.config.forecast.resolution_s,
    )


def provisioned_upper_bound(forecast: Forecast, settings: ControllerConfig) -> tuple[float, ...]:
    """cost_aware plans on the forecast's upper bound."""
    return forecast.upper_bound().values_per_s


@dataclass(frozen=True)
class ScaleIn:
    """A scale-in from `current` to `scaleout`: what it saves and costs in executor-seconds (docs/planning.md)."""

    scaleout: int
    capacity_per_s: float
    hold_s: float  # until the forecast's upper bound first reaches the capacity, capped at the horizon
    saved_executor_s: float  # (current - scaleout) * hold_s
    downtime_executor_s: float  # downtime * current: paid for while nothing is processed
    catch_up_executor_s: float  # extra records (replay + arrivals while down) / per-executor capacity after it
    # When the observed load rose back above this capacity within the lookback: how long it had stayed below it
    # (the dwell a scale-in could expect), and what the scale-out back would cost (downtime * current + catch-up).
    dwell_s: float | None = None
    undo_executor_s: float = 0.0

    @property
    def cost_executor_s(self) -> float:
        return self.downtime_executor_s + self.catch_up_executor_s

    @property
    def net_executor_s(self) -> float:
        return self.saved_executor_s - self.cost_executor_s

    @property
    def cycle_net_executor_s(self) -> float:
        """Over one observed dwell below the capacity: saved minus this scale-in's cost and the scale-out back."""
        if self.dwell_s is None:
            return self.net_executor_s
        saved = self.saved_executor_s * min(self.dwell_s, self.hold_s) / self.hold_s if self.hold_s > 0 else 0.0
        return saved - self.cost_executor_s - self.undo_executor_s


def plan_cost_aware(inputs: CostAwareInputs, settings: ControllerConfig) -> Decision:
    """Algorithm 1 on the forecast's upper bound. Its scale-outs and holds stand (safety is never traded for cost);
    a scale-in it proposes is trimmed to the scale-outs the observed load did not outgrow again within the lookback
    (unless the dwell below them paid for the round trip), that outlast the cool-down by the forecast, and that save
    more executor-seconds than they cost; the one saving most wins, or the scale-out is kept."""
    upper = inputs.forecast.upper_bound()
    safe = plan(replace(inputs, forecast=upper), settings)
    bound = CostAwareEvidence(forecast_bound="upper" if upper is not inputs.forecast else "point")
    evidence = replace(safe.evidence, planner="cost_aware", cost_aware=bound)
    current, proposed = safe.current_scaleout, safe.target_scaleout
    if proposed >= current:
        return replace(safe, evidence=evidence)
    # What every candidate shares: the records replayed and those arriving while the job is down for the scale-in.
    extra_records = inputs.replay_records + sum(upper.per_second()[: max(0, math.ceil(inputs.downtime_scale_in_s))])
    undo = _undo_executor_s(inputs)
    options = [_with_dwell(_scale_in(inputs, upper, n, extra_records), inputs, undo) for n in range(proposed, current)]
    weighed = _Weighed.of(options, settings.cooldown_s)
    bound = replace(bound, scale_in=_scale_in_evidence(weighed.best, inputs.lookback_workload_per_s))
    held = _held(inputs, settings, weighed, proposed)
    if held is not None:
        reason, note = held
        if reason is Reason.SCALE_IN_RESCALE_BUDGET:
            bound = replace(bound, rescale_tokens=round(inputs.budget.tokens, 3))
        evidence = replace(evidence, cost_aware=bound)
        return replace(safe, target_scaleout=current, reason=reason, evidence=evidence, notes=(*safe.notes, note))
    evidence = replace(evidence, cost_aware=bound)
    best = weighed.best
    if best.scaleout == proposed:
        return replace(safe, evidence=evidence)
    first = options[0]
    why = (
        f"the workload rose back above its capacity {first.capacity_per_s:.0f}/s within the lookback"
        if first not in weighed.carrying
        else f"net {first.net_executor_s:.0f} executor-s, less than {best.net_executor_s:.0f}"
    )
    if evidence.target is not None:  # Algorithm 1's numbers of the scale-in it proposed, with this one's capacity
        target = replace(evidence.target, capacity_target_per_s=round(best.capacity_per_s, 3))
        evidence = replace(evidence, target=target)
    return replace(
        safe,
        target_scaleout=best.scaleout,
        reason=Reason.SCALE_IN_BEST_NET_SAVING,
        evidence=evidence,
        notes=(*safe.notes, f"{proposed}: {why}"),
    )


@dataclass(frozen=True)
class _Weighed:
    """The scale-in options through each filter in turn, and the one saving most of the last non-empty filter."""

    options: list[ScaleIn]
    carrying: list[ScaleIn]  # not outgrown again within the lookback (or the dwell paid for the round trip)
    lasting: list[ScaleIn]  # ... that outlast the cool-down by the forecast
    paying: list[ScaleIn]  # ... that save more than they cost
    best: ScaleIn

    @classmethod
    def of(cls, options: list[ScaleIn], cooldown_s: float) -> _Weighed:
        carrying = [o for o in options if o.dwell_s is None or o.cycle_net_executor_s > 0]
        lasting = [o for o in carrying if o.hold_s >= cooldown_s]
        paying = [o for o in lasting if o.net_executor_s > 0]
        best = max(paying or lasting or carrying or options, key=lambda o: (o.net_executor_s, -o.scaleout))
        return cls(options, carrying, lasting, paying, best)


def _held(
    inputs: CostAwareInputs, settings: ControllerConfig, weighed: _Weighed, proposed: int
) -> tuple[Reason, str] | None:
    """Why the scale-in Algorithm 1 proposed is held, with a note for people; None: it goes ahead."""
    best, budget = weighed.best, inputs.budget
    if not budget.has_token:
        return Reason.SCALE_IN_RESCALE_BUDGET, (
            f"{proposed}: the rescale budget ({budget.per_hour:g} per hour) has "
            f"{budget.tokens:.2f} tokens, a whole one in {budget.wait_s():.0f} s"
        )
    if not weighed.carrying:
        return Reason.SCALE_IN_RECENTLY_OUTGROWN, (
            f"{inputs.current_scaleout - 1}: the workload rose back above its capacity "
            f"{weighed.options[-1].capacity_per_s:.0f}/s within the last "
            f"{settings.cost_aware.scale_in_lookback_s:.0f} s"
        )
    if not weighed.lasting:
        return Reason.SCALE_IN_UNDONE_WITHIN_COOLDOWN, (
            f"{best.scaleout}: the forecast reaches its capacity in {best.hold_s:.0f} s, "
            f"within the {settings.cooldown_s:.0f}-s cool-down"
        )
    if not weighed.paying:
        return Reason.SCALE_IN_NOT_WORTH_IT, (
            f"{best.scaleout}: saves {best.saved_executor_s:.0f} executor-s over {best.hold_s:.0f} s, "
            f"costs {best.cost_executor_s:.0f}"
        )
    return None


def _scale_in_evidence(best: ScaleIn, lookback_workload_per_s: tuple[float, ...]) -> ScaleInEvidence:
    return ScaleInEvidence(
        lookback_peak_per_s=round(max(lookback_workload_per_s, default=0.0), 3),
        scale_in_target=best.scaleout,
        hold_s=round(best.hold_s, 3),
        saved_executor_s=round(best.saved_executor_s, 3),
        downtime_executor_s=round(best.downtime_executor_s, 3),
        catch_up_executor_s=round(best.catch_up_executor_s, 3),
        cost_executor_s=round(best.cost_executor_s, 3),
        dwell_s=best.dwell_s,
        undo_executor_s=round(best.undo_executor_s, 3),
        cost_model=COST_MODEL,
    )


def _scale_in(inputs: PlanInputs, upper: Forecast, n: int, extra_records: float) -> ScaleIn:
    current = inputs.current_scaleout
    capacity = inputs.capacities.at(n)
    catching_up = inputs.capacities.catch_up_at(n)  # a backlog is worked off in large batches
    catch_up = extra_records * n / catching_up if catching_up > 0 else math.inf
    hold = _hold_s(upper, capacity, inputs.now_s)
    return ScaleIn(n, capacity, hold, (current - n) * hold, inputs.downtime_scale_in_s * current, catch_up)


def _with_dwell(option: ScaleIn, inputs: CostAwareInputs, undo_executor_s: float) -> ScaleIn:
    """The option with the observed dwell below its capacity before the load last rose back above it, if it did."""
    dwell_steps = _dwell_before_last_rise(inputs.lookback_workload_per_s, option.capacity_per_s)
    if dwell_steps is None:
        return option
    return replace(option, dwell_s=dwell_steps * inputs.lookback_step_s, undo_executor_s=undo_executor_s)


def _undo_executor_s(inputs: PlanInputs) -> float:
    """What the scale-out back to the current scale-out costs: its downtime, and catching up what arrived meanwhile."""
    current = inputs.current_scaleout
    capacity_current = inputs.capacities.catch_up_at(current)
    down = inputs.downtime_scale_out_s
    arrivals = inputs.workload_avg_per_s * down
    catch_up = arrivals * current / capacity_current if capacity_current > 0 else math.inf
    return down * current + catch_up


def _dwell_before_last_rise(history: tuple[float, ...], capacity_per_s: float) -> int | None:
    """Steps the load stayed below `capacity_per_s` before it last rose back to or above it; None if it never rose
    back (a fall from above is a downslope, not evidence that the load returns)."""
    run, dwell = 0, None
    for value in history:
        if value < capacity_per_s:
            run += 1
        else:
            if run:
                dwell = run
            run = 0
    return dwell


def _hold_s(forecast: Forecast, capacity_per_s: float, now_s: float) -> float:
    """Seconds from now until the forecast first reaches `capacity_per_s`; its horizon's end if it never does."""
    lead_s = max(0.0, forecast.start_s - now_s)
    for k, value in enumerate(forecast.values_per_s):
        if value >= capacity_per_s:
            return lead_s + k * forecast.step_s
    return lead_s + forecast.horizon_s


PLANNER = Planner(plan_cost_aware, cost_aware_inputs, provisioned_upper_bound)  # its registry entry (plan/registry.py)
