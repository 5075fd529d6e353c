"""Plan: Algorithm 1 of the paper — the smallest scale-out that carries the load and recovers in time (§3.2)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from daedalus_spark.analyze.recovery_prediction import predict_recovery_s, warm_capacity_per_s
from daedalus_spark.config import ControllerConfig
from daedalus_spark.domain import Decision, Reason
from daedalus_spark.evidence import Evidence, TargetEvidence, TickEvidence
from daedalus_spark.plan.port import PlanInputs, Planner, shared_only


@dataclass(frozen=True)
class Candidate:
    scaleout: int
    capacity_per_s: float
    downtime_s: float
    recovery_s: float


def plan(inputs: PlanInputs, settings: ControllerConfig) -> Decision:
    """Algorithm 1 with bounds and cool-down; every return carries a reason and its numbers."""
    current = inputs.current_scaleout
    evidence = Evidence(tick=tick_evidence(inputs))
    since_rescale = seconds_since_rescale(inputs)
    if within(since_rescale, settings.cooldown_s, settings):
        return Decision(inputs.now_s, current, current, Reason.COOLDOWN, evidence)
    if within(since_rescale, settings.recent_rescale_window_s, settings):
        next_loop_max = inputs.forecast.max_within(settings.loop_interval_s)
        evidence = replace(evidence, forecast_next_loop_max_per_s=round(next_loop_max, 3))
        if _still_fine(inputs, next_loop_max):
            return Decision(inputs.now_s, current, current, Reason.RECENT_RESCALE_STILL_FINE, evidence)
    target, reason, notes, chosen = _smallest_valid(inputs, settings)
    if chosen is not None:
        evidence = replace(evidence, target=target_evidence(chosen))
    return Decision(inputs.now_s, current, target, reason, evidence, notes)


def _smallest_valid(
    inputs: PlanInputs, settings: ControllerConfig
) -> tuple[int, Reason, tuple[str, ...], Candidate | None]:
    """Algorithm 1's search: the smallest scale-out that passes every check (with the one chosen), else the most."""
    current = inputs.current_scaleout
    forecast_max = inputs.forecast.max_within(math.inf)
    notes: list[str] = []
    deferred = False
    per_second = inputs.forecast.per_second()
    for n in range(settings.min_scaleout, settings.max_scaleout + 1):
        cand = candidate(inputs, n, per_second)
        rejection = _reject(inputs, cand, forecast_max, settings.target_recovery_s)
        if rejection is None and n == current:
            reason = Reason.SCALE_IN_DEFERRED_LAG if deferred else Reason.CURRENT_IS_SMALLEST_VALID
            return n, reason, tuple(notes), cand
        if (
            rejection is None
            and n < current
            and cand.capacity_per_s * settings.scale_in_lag_s < inputs.consumer_lag_records
        ):
            rejection, deferred = (
                f"scale-in deferred: the consumer lag {inputs.consumer_lag_records:.0f} exceeds "
                f"{settings.scale_in_lag_s:g} s of its capacity {cand.capacity_per_s:.0f}/s",
                True,
            )
        if rejection is None and cand.capacity_per_s <= forecast_max:
            rejection = (
                f"capacity {cand.capacity_per_s:.0f}/s below the {inputs.forecast.horizon_s:.0f}-s forecast peak"
            )
        if rejection is None:
            reason = Reason.SCALE_OUT_SMALLEST_VALID if n > current else Reason.SCALE_IN_SMALLEST_VALID
            return n, reason, tuple(notes), cand
        notes.append(f"{n}: {rejection}")
    return settings.max_scaleout, Reason.NO_VALID_SCALEOUT_USE_MAX, tuple(notes), None


def seconds_since_rescale(inputs: PlanInputs) -> float:
    return math.inf if inputs.last_rescale_s is None else inputs.now_s - inputs.last_rescale_s


def within(since_rescale_s: float, window_s: float, settings: ControllerConfig) -> bool:
    """A tick `since_rescale_s` after the last rescale still lies within the window of `window_s` after it. Ticks come
    every loop interval, a few milliseconds early or late, so one within a tenth of an interval of the window's end
    counts as past it: a live demo's tick 29.9996 s after a scale-out sat out the 30-s cool-down, and the scale-out
    it held back came a tick later, with latency 2.6 s past the objective."""
    return since_rescale_s + 0.1 * settings.loop_interval_s < window_s


def tick_evidence(inputs: PlanInputs) -> TickEvidence:
    """The numbers every planner's decision carries."""
    since_rescale = seconds_since_rescale(inputs)
    return TickEvidence(
        workload_avg_per_s=round(inputs.workload_avg_per_s, 3),
        forecast_max_per_s=round(inputs.forecast.max_within(math.inf), 3),
        forecast_model=inputs.forecast.model,
        capacity_current_per_s=round(inputs.capacities.current_per_s, 3),
        capacity_catch_up_per_s=round(inputs.capacities.catch_up_at(inputs.current_scaleout), 3),
        consumer_lag_records=round(inputs.consumer_lag_records, 3),
        since_rescale_s=None if math.isinf(since_rescale) else round(since_rescale, 3),
        capacity_basis=inputs.capacities.current_basis or None,
    )


def target_evidence(chosen: Candidate) -> TargetEvidence:
    """The numbers of the scale-out chosen."""
    return TargetEvidence(
        capacity_target_per_s=round(chosen.capacity_per_s, 3),
        predicted_recovery_s=chosen.recovery_s,
        downtime_used_s=chosen.downtime_s,
    )


def _still_fine(inputs: PlanInputs, next_loop_max_per_s: float) -> bool:
    capacity = inputs.capacities.current_per_s
    return capacity > inputs.workload_avg_per_s and capacity > next_loop_max_per_s


def candidate(inputs: PlanInputs, n: int, forecast_per_second: tuple[float, ...]) -> Candidate:
    """Scale-out n: its capacity, the downtime of going there and the predicted recovery."""
    capacity = inputs.capacities.at(n)
    # Keeping the scale-out is judged against a failure restart, which costs what a scale-out does.
    downtime = inputs.downtime_scale_in_s if n < inputs.current_scaleout else inputs.downtime_scale_out_s
    catch_up = inputs.capacities.catch_up_at(n)  # a backlog is worked off in large batches
    before = inputs.capacities.catch_up_at(inputs.current_scaleout)
    recovery = predict_recovery_s(
        capacity_per_s=catch_up,
        forecast_per_second=forecast_per_second,
        downtime_s=downtime,
        replay_records=inputs.replay_records,
        lag_records=inputs.consumer_lag_records,
        # a scale-out's new executors warm up (config recovery.scale_out_warmup_s)
        warmup_s=inputs.warmup_scale_out_s if n > inputs.current_scaleout else 0.0,
        warmup_capacity_per_s=warm_capacity_per_s(before, catch_up, inputs.warmup_capacity_ratio),
    )
    return Candidate(n, capacity, downtime, recovery)


def _reject(inputs: PlanInputs, cand: Candidate, forecast_max: float, target_recovery_s: float) -> str | None:
    """Why a scale-out fails the checks every candidate must pass (None: it passes)."""
    if cand.capacity_per_s <= inputs.workload_avg_per_s:
        return f"capacity {cand.capacity_per_s:.0f}/s not above the average workload {inputs.workload_avg_per_s:.0f}/s"
    if cand.recovery_s > target_recovery_s:
        return f"predicted recovery {cand.recovery_s:.0f} s exceeds the target {target_recovery_s:.0f} s"
    peak_while_recovering = inputs.forecast.max_within(cand.recovery_s)
    if cand.capacity_per_s < peak_while_recovering:
        return (
            f"capacity {cand.capacity_per_s:.0f}/s below the forecast peak "
            f"{peak_while_recovering:.0f}/s while recovering"
        )
    return None


# Its registry entry (plan/registry.py): Algorithm 1 reads the shared inputs and provisions for the point forecast.
PLANNER = Planner(plan, shared_only)
