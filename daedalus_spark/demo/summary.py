"""Demo: one live run's figures — rescales as the executor count shows them, lag in records and seconds, executor
time against a static maximum, and the words in against the words counted."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from daedalus_spark.demo.counts import WordCounts
from daedalus_spark.demo.plan import DemoPlan
from daedalus_spark.demo.sizing import load_extremes


@dataclass(frozen=True)
class LiveRun:
    """What one run saw: the samples, when the load cycle ended (s since sampling began), whether the lag was then
    worked off within the drain time, the agent's first answer on /executors, and the words in against counted."""

    samples: list[Any]
    load_ended_s: float
    drained: bool
    agent: dict[str, Any]
    counts: WordCounts | None = None
    lag_check: dict[str, Any] | None = None  # Kafka: exporter's lag through Prometheus against the broker's


EXTREME_WINDOW_S = 60.0  # executors "at the peak": the most live within this of the load's peak; the trough: fewest
SETTLE_S = 10.0  # a live count held this long is a level; passing levels (executors joining one by one) are not


def settled_rescales(t: np.ndarray, live: np.ndarray, settle_s: float = SETTLE_S) -> int:
    """Changes between the live executor counts held for `settle_s` or more: one per rescale, however the executors
    joined or left, the same for every autoscaler."""
    levels: list[float] = []
    start = 0
    for i in range(1, len(live) + 1):
        if i == len(live) or live[i] != live[start]:
            if t[i - 1] - t[start] >= settle_s and (not levels or levels[-1] != live[start]):
                levels.append(float(live[start]))
            start = i
    return max(0, len(levels) - 1)


def lag_seconds(t: np.ndarray, records_in: np.ndarray, lag: np.ndarray) -> np.ndarray:
    """How old the oldest unread record is at each sample: the time since the source's end offset was where the
    query's committed offset is now (records in, minus the lag), from the sampled history of records in."""
    committed = records_in - lag
    appended_at = np.interp(committed, records_in, t)  # records in only grows: an inverse by interpolation
    delay: np.ndarray = np.maximum(0.0, t - appended_at)
    return delay


def summarize(plan: DemoPlan, run: LiveRun, decisions: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """The run's figures over its load cycle (samples up to its end), and its record counts after the drain."""
    samples = [s for s in run.samples if s.t_s <= run.load_ended_s]
    t, live, lag, records_in = (
        np.array([getattr(s, name) for s in samples], dtype=float)
        for name in ("t_s", "executors", "lag_records", "records_in")
    )
    ok = np.isfinite(live)
    executor_s = float(np.sum(live[ok][:-1] * np.diff(t[ok]))) if ok.sum() > 1 else 0.0
    span_s = float(t[ok][-1] - t[ok][0]) if ok.sum() > 1 else 0.0
    applied = [
        d
        for d in decisions
        if d.get("actuation") and d["actuation"]["outcome"] in ("accepted", "applied", "unconfirmed")
    ]
    reasons: dict[str, int] = {}
    for d in decisions:
        reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
    seen = np.isfinite(lag) & np.isfinite(records_in)
    lag_s = lag_seconds(t[seen], records_in[seen], lag[seen]) if seen.sum() > 1 else np.zeros(0)
    finite_lag = lag[seen]
    last = run.samples[-1] if run.samples else None
    records_read = last.records_out if last is not None and math.isfinite(last.records_out) else None
    counts = run.counts

    def stat(values: np.ndarray, q: float) -> float | None:
        return round(float(np.percentile(values, q)), 1) if values.size else None

    load = load_extremes(
        plan.trace,
        start_s=plan.trace_start_s,
        seconds=plan.trace_seconds,
        scale=plan.scale,
        compression=plan.compression,
    )

    def live_near(at_s: float) -> np.ndarray:
        near = ok & (np.abs(t - at_s) <= EXTREME_WINDOW_S)
        counts: np.ndarray = live[near]
        return counts

    at_peak, at_trough = live_near(load.peak_at_s), live_near(load.trough_at_s)

    return {
        "autoscaler": plan.autoscaler,
        "wall_s": round(wall_s, 1),
        "load_s": round(span_s, 1),
        "ticks": len(decisions),
        "decisions_by_reason": reasons,
        "scale_outs": sum(1 for d in applied if d["target"] > d["current"]),
        "scale_ins": sum(1 for d in applied if d["target"] < d["current"]),
        "rescales_failed_or_refused": sum(
            1 for d in decisions if d.get("actuation") and d["actuation"]["outcome"] in ("failed", "refused")
        ),
        "rescales_live": settled_rescales(t[ok], live[ok]),
        "agent_refusing": run.agent.get("refusing", ""),
        "load_peak_per_s": round(load.peak_per_s),
        "load_trough_per_s": round(load.trough_per_s),
        "executors_at_peak": int(at_peak.max()) if at_peak.size else None,
        "executors_at_trough": int(at_trough.min()) if at_trough.size else None,
        "executor_seconds": round(executor_s, 1),
        "static_max_executor_seconds": round(plan.max_scaleout * span_s, 1),
        "executor_seconds_vs_static_max": round(executor_s / (plan.max_scaleout * span_s), 3) if span_s else None,
        "lag_p95_records": stat(finite_lag, 95),
        "lag_max_records": stat(finite_lag, 100),
        "lag_p95_s": stat(lag_s, 95),
        "lag_max_s": stat(lag_s, 100),
        "drained": run.drained,
        "lines_in": counts.lines_in if counts else None,
        "lines_read": records_read,  # numInputRows summed: a stage retried after a lost executor reads again
        "records_in": counts.words_in if counts else None,  # words appended...
        "records_out": counts.words_out if counts else None,  # ...and counted: the sink's final counts, summed
        "records_exact": bool(counts and counts.exact),
        "lag_check": run.lag_check,
        "executors_over_time": [
            [round(float(a), 1), int(b)] for a, b in zip(t[ok], live[ok], strict=True) if not math.isnan(b)
        ][::15],
    }


def format_summary(s: dict[str, Any]) -> str:
    counts = (
        f"words in {s['records_in']}, counted {s['records_out']}"
        if s["records_in"] is not None
        else "words not counted"
    )
    return "\n".join(
        [
            f"demo ({s['autoscaler']}): {s['ticks']} ticks in {s['wall_s']:.0f} s; "
            f"scale-outs {s['scale_outs']}, scale-ins {s['scale_ins']}, "
            f"failed/refused {s['rescales_failed_or_refused']}; live rescales {s['rescales_live']}",
            f"  executors at the load's peak ({s['load_peak_per_s']:,} lines/s) {s['executors_at_peak']}, at its "
            f"trough ({s['load_trough_per_s']:,}) {s['executors_at_trough']} (within {EXTREME_WINDOW_S:g} s of each)",
            f"  decisions: {', '.join(f'{k} {v}' for k, v in sorted(s['decisions_by_reason'].items()))}",
            f"  executor-seconds {s['executor_seconds']:.0f} vs {s['static_max_executor_seconds']:.0f} static at the "
            f"largest scale-out ({s['executor_seconds_vs_static_max']})",
            f"  consumer lag p95 {s['lag_p95_records']} records ({s['lag_p95_s']} s of input), "
            f"max {s['lag_max_records']} ({s['lag_max_s']} s)",
            f"  {counts}: {'exact' if s['records_exact'] else 'NOT exact' if s['drained'] else 'lag not worked off'}",
            *lag_check_line(s.get("lag_check")),
        ]
    )


def failed_checks(s: dict[str, Any], *, target_recovery_s: float) -> list[str]:
    """The checks a run failed, one line each naming the check and its figures. A run passes when it counted every
    word exactly and, with our controller, kept the lag p95 within the recovery target; how many rescales that took
    is the controller's business (a job that never needed one is not failed for making none), but it must have
    ticked. The autoscalers it is compared with are judged on counting only: their lag is reported, not demanded."""
    failed = []
    if not s["drained"]:
        failed.append(
            f"lag worked off after the load cycle: not within the drain time (lag max {s['lag_max_records']})"
        )
    elif not s["records_exact"]:
        failed.append(f"words counted exactly: {s['records_in']} appended, {s['records_out']} counted")
    lag = s["lag_p95_s"]
    if s["autoscaler"] == "daedalus" and (lag is None or lag > target_recovery_s):
        failed.append(
            f"lag p95 within the recovery target: {lag} s of input against controller.target_recovery_s "
            f"{target_recovery_s:g} s"
        )
    if s["autoscaler"] in ("daedalus", "batch-ratio") and s["ticks"] == 0:
        failed.append("the controller decided: 0 ticks in the decision log")
    return [f"demo check failed: {line}" for line in failed]


def lag_check_line(check: dict[str, Any] | None) -> list[str]:
    if not check:
        return []
    return [
        f"  kafka-exporter's lag through Prometheus within one batch's records of the broker's: "
        f"{check['within_one_batch']} of {check['samples']} samples ({_worst_gap(check)}; {_missing(check)})"
    ]


def _missing(check: dict[str, Any]) -> str:
    because = check.get("missing_because") or {}
    reasons = ", ".join(f"{count} without {what}" for what, count in because.items())
    return f"{check['missing']} missing" + (f": {reasons}" if reasons else "")


def _worst_gap(check: dict[str, Any]) -> str:
    gap, batch = check.get("worst_gap_records"), check.get("worst_gap_batch_records")
    if gap is None or batch is None:
        return "no sample"
    return f"worst {gap:,} records apart, when one batch was {batch:,} records"
