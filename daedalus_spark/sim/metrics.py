"""Simulation: judge a run by its decisions — executor-hours, rescales, lag, latency and recovery violations.

The acceptance rule, the one every judge uses (`passes`): every second outside a recovery has latency within
`target_latency_s`, and every rescale recovers within `target_recovery_s`; so does the query's start where the load
begins before it (`RunResult.start`). A recovery runs from a rescale's request until, once the rescale has taken
effect, latency is back within the objective and holds there for as long again. `behind_s` (batches overrunning the
trigger) is a diagnostic, not a criterion."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.sim.job import Rescale
from daedalus_spark.sim.runner import RunResult


@dataclass(frozen=True)
class RunMetrics:
    """The figures of one run; `fields()` renders them, in this order, for the JSON output and the tables."""

    avg_executors: float
    executor_hours: float
    vs_static: float  # executor-hours over the static maximum's
    vs_oracle: float  # executor-hours over the oracle's (0 when the oracle's are 0)
    vs_optimum: float  # executor-hours over the optimum's (NaN when the optimum is not known)
    rescales: int
    downtime_s: int
    lag_growth_s: int
    lag_record_s: float
    latency_p50_s: float
    latency_p95_s: float
    latency_max_s: float
    recovery_violations: int
    max_recovery_s: float
    final_lag_records: float
    latency_violation_s: int
    passes: bool  # the acceptance rule (`passes`), rendered as 1 or 0
    behind_s: int

    def fields(self) -> dict[str, float | int]:
        """The flat fields of `simulate --json`, in METRIC_ORDER."""
        return {**dataclasses.asdict(self), "passes": int(self.passes)}


METRIC_ORDER = tuple(f.name for f in dataclasses.fields(RunMetrics))


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The q-quantile (0..1) of values where each value counts as often as its weight (records)."""
    if len(values) == 0:
        return 0.0
    if float(weights.sum()) <= 0:
        weights = np.ones_like(values)
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    idx = int(np.searchsorted(cum, q * cum[-1], side="left"))
    return float(values[order][min(idx, len(values) - 1)])


@dataclass(frozen=True)
class RecoveryOutcome:
    rescale: Rescale
    recovery_s: float | None  # None: not recovered before the trace ended


def caught_up(result: RunResult) -> np.ndarray:
    """Per second: the lag is down to what a job that keeps up holds, one second of arrivals (micro-batch: two
    triggers', the next batch's input and the running one's)."""
    return np.asarray(result.lag_records <= np.maximum(result.workload_per_s * result.lag_allowance_s, 1.0))


def within_latency(result: RunResult, target_latency_s: float) -> np.ndarray:
    """Per second: the latency of that second's records within the user's objective."""
    return np.asarray(result.latency_s <= target_latency_s)


def effect_s(rescale: Rescale) -> float:
    """Seconds from a rescale's request until it has taken effect: its stop (a restart), or its joining executors'
    registration and first-batch stall, or its killed executors' leave (in place)."""
    return max(float(rescale.downtime_s), rescale.registration_s + rescale.stall_s, rescale.leave_s)


def held_for(mask: np.ndarray, seconds: int) -> np.ndarray:
    """Per second: `mask` holds from it for `seconds` seconds (or to the end of the run)."""
    total = len(mask)
    misses = np.concatenate([[0], np.cumsum(~mask)])
    ends = np.minimum(np.arange(total) + max(1, seconds), total)
    return np.asarray(misses[ends] - misses[:total] == 0)


def recoveries(result: RunResult, target_latency_s: float | None = None) -> list[RecoveryOutcome]:
    """Per rescale (and the query's start, first, where the run has one): from when it has taken effect until the job
    is back to normal: latency within `target_latency_s` and holding there for as long again (the acceptance rule: a
    job working off a backlog in batches dips within the objective between two batches before it is through), or
    without it the lag down to what a job that keeps up holds (paper Fig. 6)."""
    if target_latency_s is None:
        caught = caught_up(result)
    else:
        caught = held_for(within_latency(result, target_latency_s), math.ceil(target_latency_s))
    total = len(caught)
    out = []
    for r in (result.start, *result.rescales) if result.start else result.rescales:
        start = min(r.time_s + math.ceil(effect_s(r)), total)
        hits = np.flatnonzero(caught[start:])
        rec = float(start + hits[0] + 1 - r.time_s) if len(hits) else None
        out.append(RecoveryOutcome(r, rec))
    return out


def recovery_violations(result: RunResult, target_s: float, target_latency_s: float | None = None) -> int:
    """Rescales that took longer than the target to recover, or had not when the run ended: latency was above the
    objective at its last second (a recovery back within it there has held to the end, `held_for`). A run that ends
    still behind after a rescale has not shown that it recovers; judged as passing, it would let a policy drop
    executors in a trace's last `target_s` for free."""
    return sum(1 for o in recoveries(result, target_latency_s) if o.recovery_s is None or o.recovery_s > target_s)


def seconds_behind(result: RunResult, target_s: float) -> int:
    """Seconds the job is behind (lag above one second of arrivals, as recoveries() counts caught up) outside the
    `target_s` after each rescale's stop (the time a recovery may take): a run that keeps up has none (the
    optimum's constraint). The window is the target, not the recovery itself, so that a recovery that ends sooner
    than planned (a shorter downtime drawn) and dips below the line once is not counted against the rest."""
    return int(behind_mask(result, target_s).sum())


def behind_mask(result: RunResult, target_s: float) -> np.ndarray:
    """Per second: behind, outside the `target_s` after each rescale's stop (what seconds_behind counts)."""
    return np.asarray(~caught_up(result) & ~recovery_windows(result, target_s))


def recovery_windows(result: RunResult, target_recovery_s: float) -> np.ndarray:
    """Per second: within `target_recovery_s` of a rescale's request (where `behind_s`, a diagnostic, looks away)."""
    excused = np.zeros(len(result.scaleout), dtype=bool)
    for r in result.rescales:
        excused[r.time_s : r.time_s + math.ceil(target_recovery_s)] = True
    return excused


def recovering(result: RunResult, *, target_latency_s: float, target_recovery_s: float) -> np.ndarray:
    """Per second: within a recovery, from a rescale's request until it has recovered (`recoveries`), or for the whole
    `target_recovery_s` where it has not by then (that rescale fails the rule's second half anyway). Latency after a
    recovery is held to the objective again, as the optimum's schedule holds it."""
    excused = np.zeros(len(result.scaleout), dtype=bool)
    for o in recoveries(result, target_latency_s):
        end = o.recovery_s if o.recovery_s is not None and o.recovery_s <= target_recovery_s else target_recovery_s
        excused[o.rescale.time_s : o.rescale.time_s + math.ceil(end)] = True
    return excused


def latency_violation_mask(result: RunResult, *, target_latency_s: float, target_recovery_s: float) -> np.ndarray:
    """Per second: latency above the objective outside every recovery (the rule's first half)."""
    excused = recovering(result, target_latency_s=target_latency_s, target_recovery_s=target_recovery_s)
    return np.asarray(~within_latency(result, target_latency_s) & ~excused)


def passes(result: RunResult, *, target_latency_s: float, target_recovery_s: float) -> bool:
    """The acceptance rule: latency within the objective outside recoveries, and every recovery within its target."""
    late = latency_violation_mask(result, target_latency_s=target_latency_s, target_recovery_s=target_recovery_s)
    return not late.any() and recovery_violations(result, target_recovery_s, target_latency_s) == 0


def summarize(
    result: RunResult,
    *,
    static_executors: int,
    oracle_executor_hours: float,
    target_recovery_s: float,
    target_latency_s: float,
    optimum_executor_hours: float | None = None,
) -> RunMetrics:
    """The metrics of one run (vs_optimum is NaN when the optimum is not known)."""
    duration_h = len(result.scaleout) / 3600.0
    executor_hours = float(result.scaleout.sum()) / 3600.0
    lag = result.lag_records
    growth = np.diff(np.concatenate(([0.0], lag))) > 1e-9
    w = result.workload_per_s
    recs = [o.recovery_s for o in recoveries(result, target_latency_s) if o.recovery_s is not None]
    late = latency_violation_mask(result, target_latency_s=target_latency_s, target_recovery_s=target_recovery_s)
    violations = recovery_violations(result, target_recovery_s, target_latency_s)
    return RunMetrics(
        avg_executors=float(result.scaleout.mean()) if len(result.scaleout) else 0.0,
        executor_hours=executor_hours,
        vs_static=executor_hours / (static_executors * duration_h) if duration_h else 0.0,
        vs_oracle=executor_hours / oracle_executor_hours if oracle_executor_hours > 0 else 0.0,
        vs_optimum=executor_hours / optimum_executor_hours if optimum_executor_hours else math.nan,
        rescales=len(result.rescales),
        downtime_s=int(sum(r.downtime_s for r in result.rescales)),
        lag_growth_s=int(growth.sum()),
        lag_record_s=float(lag.sum()),
        latency_p50_s=weighted_percentile(result.latency_s, w, 0.50),
        latency_p95_s=weighted_percentile(result.latency_s, w, 0.95),
        latency_max_s=float(result.latency_s.max()) if len(lag) else 0.0,
        recovery_violations=violations,
        max_recovery_s=float(max(recs)) if recs else 0.0,
        final_lag_records=float(lag[-1]) if len(lag) else 0.0,
        latency_violation_s=int(late.sum()),
        passes=violations == 0 and not late.any(),
        behind_s=seconds_behind(result, target_recovery_s),
    )


def scored_part(result: RunResult, start: int) -> RunResult:
    """The run from second `start` on: the lead-in and the rescales made in it (the query's start too) are not
    judged."""
    allowance = result.lag_allowance_s
    rescales = tuple(dataclasses.replace(r, time_s=r.time_s - start) for r in result.rescales if r.time_s >= start)
    return dataclasses.replace(
        result,
        workload_per_s=result.workload_per_s[start:],
        scaleout=result.scaleout[start:],
        processing=result.processing[start:],
        processed_per_s=result.processed_per_s[start:],
        lag_records=result.lag_records[start:],
        latency_s=result.latency_s[start:],
        capacity_per_s=result.capacity_per_s[start:],
        rescales=rescales,
        lag_allowance_s=allowance[start:] if isinstance(allowance, np.ndarray) else allowance,
        start=result.start if start == 0 else None,
    )
