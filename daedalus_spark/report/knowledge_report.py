"""Report: what a live or stopped controller knows — capacity, forecasts, decisions, recoveries — from its store."""

from __future__ import annotations

import argparse
import html
import io
import json
import math
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

from daedalus_spark.analyze.forecast import wape
from daedalus_spark.analyze.recovery_measurement import PendingRecovery
from daedalus_spark.config import Config, load_config
from daedalus_spark.domain import Decision, ExecutorCapacity, Recovery
from daedalus_spark.knowledge.history import ForecastRecord
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import IncompatibleKnowledge, Knowledge, restore
from daedalus_spark.redact import redact
from daedalus_spark.report.jsonout import finite_or_none
from daedalus_spark.report.outfile import replace_file


def load_knowledge(path: str | Path, config: Config | None = None) -> Knowledge:
    """The knowledge in a store, opened read-only: a running controller is not disturbed, a foreign file not changed."""
    if not Path(path).exists():
        raise IncompatibleKnowledge(f"{path}: no such file")
    snapshot = SqliteKnowledgeStore(path).load()  # loading opens the file read-only
    if snapshot is None:
        raise IncompatibleKnowledge(f"{path}: an empty knowledge file (no controller has saved to it yet)")
    knowledge = restore(snapshot, config or Config(), now_s=time.time())
    knowledge.damage[:] = [f"{line} (in {path})" for line in knowledge.damage]  # which file, for each record
    return knowledge


def iso(time_s: float) -> str:
    """Wall-clock time, ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(time_s, UTC).isoformat(timespec="seconds")


def covered_steps(record: ForecastRecord, actual: dict[float, float]) -> list[tuple[int, float]]:
    """(step index, its end time) of the steps of a forecast whose actual workload has been seen."""
    times = [record.start_s + (i + 1) * record.step_s for i in range(len(record.values_per_s))]
    return [(i, t) for i, t in enumerate(times) if t in actual]


def scored_forecast(k: Knowledge) -> tuple[ForecastRecord, list[float], list[float]] | None:
    """The newest forecast whose whole horizon has come, with the actual workload at its steps (or the newest
    partly covered one): (forecast, predicted, actual)."""
    actual = dict(k.history.workload)
    best: tuple[ForecastRecord, list[tuple[int, float]]] | None = None
    for record in reversed(k.history.forecasts):
        steps = covered_steps(record, actual)
        if steps and (best is None or len(steps) > len(best[1])):
            best = (record, steps)
        if len(steps) == len(record.values_per_s) > 0:
            break
    if best is None:
        return None
    record, steps = best
    return record, [record.values_per_s[i] for i, _ in steps], [actual[t] for _, t in steps]


def _finite(value: float | None) -> float | None:
    """A number as the JSON output carries it: None for NaN and ±inf."""
    return value if value is None or math.isfinite(value) else None


@dataclass(frozen=True)
class ScoredForecast:
    """A forecast against the workload that came at its steps."""

    record: ForecastRecord
    step_times_s: tuple[float, ...]
    predicted_per_s: tuple[float, ...]
    upper_per_s: tuple[float, ...] | None  # None: a store saved before the bounds were kept
    planned_per_s: tuple[float, ...] | None
    actual_per_s: tuple[float, ...]
    wape: float | None  # None: not finite (nothing came, something was forecast)

    def to_json(self) -> dict[str, Any]:
        return {
            "time_s": self.record.time_s,
            "time": iso(self.record.time_s),
            "model": self.record.model,
            "step_times": [iso(t) for t in self.step_times_s],
            "step_times_s": self.step_times_s,
            "predicted_per_s": self.predicted_per_s,
            "upper_per_s": self.upper_per_s,
            "planned_per_s": self.planned_per_s,
            "actual_per_s": self.actual_per_s,
            "wape": self.wape,
        }


def _scored(k: Knowledge) -> ScoredForecast | None:
    scored = scored_forecast(k)
    if scored is None:
        return None
    record, predicted, actual = scored
    steps = covered_steps(record, dict(k.history.workload))
    return ScoredForecast(
        record,
        step_times_s=tuple(t for _, t in steps),
        predicted_per_s=tuple(predicted),
        upper_per_s=_at(record.upper_per_s, steps),
        planned_per_s=_at(record.planned_per_s, steps),
        actual_per_s=tuple(actual),
        wape=_finite(wape(actual, predicted)),
    )


def _at(values: tuple[float, ...], steps: list[tuple[int, float]]) -> tuple[float, ...] | None:
    return tuple(values[i] for i, _ in steps) if values else None


@dataclass(frozen=True)
class ForecastAccuracy:
    """One forecast whose whole horizon has come: its WAPE and the shares of steps its bounds covered."""

    time_s: float
    wape: float | None  # None: not finite
    upper_coverage_ratio: float | None  # None: a store saved before the bounds were kept
    planned_coverage_ratio: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "time_s": self.time_s,
            "time": iso(self.time_s),
            **{k: v for k, v in asdict(self).items() if k != "time_s"},
        }


def forecast_accuracy(k: Knowledge) -> list[ForecastAccuracy]:
    """Every kept forecast whose whole horizon has come: its WAPE, and the share of steps whose actual workload
    stayed at or below the interval's upper bound and below the load the planner provisioned for."""
    actual = dict(k.history.workload)
    rows = []
    for record in k.history.forecasts:
        steps = covered_steps(record, actual)
        if not steps or len(steps) < len(record.values_per_s):
            continue
        came = [actual[t] for _, t in steps]
        rows.append(
            ForecastAccuracy(
                record.time_s,
                wape=_finite(wape(came, record.values_per_s)),
                upper_coverage_ratio=_coverage(came, record.upper_per_s),
                planned_coverage_ratio=_coverage(came, record.planned_per_s),
            )
        )
    return rows


def _coverage(came: list[float], bound: tuple[float, ...]) -> float | None:
    if len(bound) != len(came):
        return None  # a store saved before the bounds were kept
    return sum(a <= b + 1e-9 for a, b in zip(came, bound, strict=True)) / len(came)


@dataclass(frozen=True)
class ScaleoutCapacity:
    scaleout: int
    capacity_per_s: float
    catch_up_per_s: float
    observed: bool  # else extrapolated


@dataclass(frozen=True)
class CapacityReport:
    """The latest capacity table: per scale-out, per executor, and its notes."""

    current_scaleout: int
    current_per_s: float
    current_at_trigger_per_s: float | None
    per_scaleout: tuple[ScaleoutCapacity, ...]
    executors: tuple[ExecutorCapacity, ...]
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in asdict(self).items() if k not in ("executors", "notes")},
            "executors": [{**asdict(w), "skew_factor_ratio": w.skew_factor_ratio} for w in self.executors],
            "notes": list(self.notes),
        }


def _capacity(k: Knowledge) -> CapacityReport | None:
    table = k.history.latest_table
    if table is None:
        return None
    per_scaleout = tuple(
        ScaleoutCapacity(n, c, table.catch_up_at(n), n in table.observed_scaleouts)
        for n, c in enumerate(table.per_scaleout_per_s, start=1)
    )
    return CapacityReport(
        table.current_scaleout,
        table.current_per_s,
        table.current_at_trigger_per_s,
        per_scaleout,
        table.executors,
        tuple(table.notes),
    )


@dataclass(frozen=True)
class ForecastReport:
    latest: ForecastRecord | None
    scored: ScoredForecast | None
    accuracy: tuple[ForecastAccuracy, ...]
    model_history: tuple[ForecastRecord, ...]  # each forecast whose model, order or refits changed

    def to_json(self) -> dict[str, Any]:
        return {
            "latest": None if self.latest is None else asdict(self.latest),
            "scored": None if self.scored is None else self.scored.to_json(),
            "accuracy": [a.to_json() for a in self.accuracy],
            "model_history": [
                {
                    "time_s": f.time_s,
                    "time": iso(f.time_s),
                    "model": f.model,
                    "arima_order": f.arima_order,
                    "refits": f.refits,
                    "last_wape": f.last_wape,
                }
                for f in self.model_history
            ],
        }


def _forecast(k: Knowledge) -> ForecastReport:
    forecasts = k.history.forecasts
    models = [f for i, f in enumerate(forecasts) if i == 0 or _model_key(f) != _model_key(forecasts[i - 1])]
    latest = forecasts[-1] if forecasts else None
    return ForecastReport(latest, _scored(k), tuple(forecast_accuracy(k)), tuple(models))


@dataclass(frozen=True)
class DecisionsReport:
    count: int
    by_reason: dict[str, int]
    rescales: tuple[Decision, ...]
    latest: tuple[Decision, ...]  # the last 20

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "by_reason": self.by_reason,
            "rescales": [
                {
                    "time_s": d.time_s,
                    "time": iso(d.time_s),
                    "from": d.current_scaleout,
                    "to": d.target_scaleout,
                    "reason": d.reason.value,
                    "actuation": _outcome(d),
                    "detail": "" if d.actuation is None else d.actuation.detail,
                }
                for d in self.rescales
            ],
            "latest": [
                {
                    "time_s": d.time_s,
                    "time": iso(d.time_s),
                    "current": d.current_scaleout,
                    "target": d.target_scaleout,
                    "reason": d.reason.value,
                    "actuation": _outcome(d),
                }
                for d in self.latest
            ],
        }


def _outcome(d: Decision) -> str | None:
    return None if d.actuation is None else d.actuation.outcome


def _decisions(k: Knowledge) -> DecisionsReport:
    decisions = list(k.decisions)
    by_reason = dict(Counter(d.reason.value for d in decisions))
    return DecisionsReport(len(decisions), by_reason, tuple(d for d in decisions if d.rescale), tuple(decisions[-20:]))


@dataclass(frozen=True)
class RecoveryReport:
    downtime_scale_out_s: float
    downtime_scale_in_s: float
    measured: tuple[Recovery, ...]
    pending: PendingRecovery | None

    def to_json(self) -> dict[str, Any]:
        return {
            "downtime_scale_out_s": self.downtime_scale_out_s,
            "downtime_scale_in_s": self.downtime_scale_in_s,
            "measured": [{**asdict(r), "rescale_time": iso(r.rescale_time_s)} for r in self.measured],
            "pending": None if self.pending is None else asdict(self.pending),
        }


@dataclass(frozen=True)
class KnowledgeReport:
    """What a store holds, as `report` shows it; `to_json()` is `--json` and report.json."""

    capacity: CapacityReport | None
    forecast: ForecastReport
    decisions: DecisionsReport
    recovery: RecoveryReport
    last_rescale_s: float | None
    damage: tuple[str, ...]
    backfill: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """Strict: a value that is not a finite number is null."""
        out: dict[str, Any] = finite_or_none(
            {
                "capacity": None if self.capacity is None else self.capacity.to_json(),
                "forecast": self.forecast.to_json(),
                "decisions": self.decisions.to_json(),
                "recovery": self.recovery.to_json(),
                "last_rescale_s": self.last_rescale_s,
                "last_rescale": None if self.last_rescale_s is None else iso(self.last_rescale_s),
                "damage": list(self.damage),
                "backfill": list(self.backfill),
            }
        )
        return out


def build(k: Knowledge) -> KnowledgeReport:
    recovery = RecoveryReport(
        k.recovery.downtime_scale_out_s, k.recovery.downtime_scale_in_s, tuple(k.recoveries), k.recovery.pending
    )
    return KnowledgeReport(
        capacity=_capacity(k),
        forecast=_forecast(k),
        decisions=_decisions(k),
        recovery=recovery,
        last_rescale_s=k.last_rescale_s,
        damage=tuple(k.damage),
        backfill=tuple(k.history.backfill),
    )


def _model_key(f: ForecastRecord) -> tuple[Any, ...]:
    return (f.model, f.arima_order, f.refits)


def format_text(r: KnowledgeReport) -> str:
    lines = [f"knowledge store: {line}" for line in r.damage]
    lines += list(r.backfill)
    lines += _capacity_lines(r.capacity)
    lines += _forecast_lines(r.forecast)
    d = r.decisions
    lines.append(f"decisions: {d.count} ({', '.join(f'{k} {v}' for k, v in sorted(d.by_reason.items()))})")
    for x in d.rescales[-10:]:
        detail = "" if x.actuation is None else x.actuation.detail
        lines.append(
            f"  {iso(x.time_s)}: {x.current_scaleout} -> {x.target_scaleout} {x.reason.value} [{_outcome(x)}] {detail}"
        )
    rec = r.recovery
    lines.append(
        f"downtime estimates: scale-out {rec.downtime_scale_out_s:.1f} s, "
        f"scale-in {rec.downtime_scale_in_s:.1f} s; measured recoveries: {len(rec.measured)}"
    )
    for m in rec.measured[-5:]:
        lines.append(
            f"  {iso(m.rescale_time_s)} {m.direction} {m.from_scaleout}->{m.to_scaleout}: {m.recovery_s:.0f} s"
        )
    return "\n".join(lines)


def _capacity_lines(cap: CapacityReport | None) -> list[str]:
    if cap is None:
        return ["capacity: nothing learned yet"]
    at_trigger = cap.current_at_trigger_per_s
    trigger_note = (
        f" within the plan's share of the latency objective; {at_trigger:,.0f} at one batch per trigger"
        if at_trigger is not None
        else ""
    )
    lines = [
        f"capacity at scale-out {cap.current_scaleout}: {cap.current_per_s:,.0f} records/s{trigger_note}",
        "  per scale-out: "
        + ", ".join(f"{p.scaleout}{'' if p.observed else '*'}: {p.capacity_per_s:,.0f}" for p in cap.per_scaleout)
        + "   (* extrapolated)",
        "  catch-up (working off a backlog): "
        + ", ".join(f"{p.scaleout}: {p.catch_up_per_s:,.0f}" for p in cap.per_scaleout),
    ]
    lines.extend(f"  note: {note}" for note in cap.notes)
    for w in cap.executors:
        lines.append(
            f"  executor {w.executor_id}: {w.capacity_per_s:,.0f}/s ({w.method}, "
            f"{w.samples} samples, {w.intercept_per_s:.0f} + {w.slope_per_s:.0f} x util, "
            f"skew {w.skew_factor_ratio:.2f})"
        )
    return lines


def _forecast_lines(f: ForecastReport) -> list[str]:
    lines = []
    if f.latest:
        latest = f.latest
        order = None if latest.arima_order is None else list(latest.arima_order)  # as the JSON shows it
        lines.append(
            f"forecast: {latest.model} (order {order}, refits {latest.refits}), "
            f"peak {max(latest.values_per_s or [0]):,.0f}/s over {len(latest.values_per_s)} steps"
        )
    if f.scored and f.scored.wape is not None:
        s = f.scored
        lines.append(
            f"  forecast made at {iso(s.record.time_s)} vs what came: WAPE {s.wape:.1%} "
            f"over {len(s.actual_per_s)} steps"
        )
    scored = [a for a in f.accuracy if a.wape is not None]
    if scored:
        covered = [a.planned_coverage_ratio for a in scored if a.planned_coverage_ratio is not None]
        lines.append(
            f"  {len(scored)} forecasts scored since {iso(scored[0].time_s)}: median WAPE "
            f"{median(a.wape for a in scored if a.wape is not None):.1%}"
            + (f", workload within the planned load at {sum(covered) / len(covered):.1%} of steps" if covered else "")
        )
    lines.append(f"  model changes: {len(f.model_history)}")
    return lines


def plot_capacity(r: KnowledgeReport, ax: Any) -> None:
    per = r.capacity.per_scaleout if r.capacity else ()
    ax.bar(
        [p.scaleout for p in per],
        [p.capacity_per_s for p in per],
        color=["tab:blue" if p.observed else "tab:gray" for p in per],
    )
    ax.set(xlabel="scale-out (executors)", ylabel="records/s", title="capacity per scale-out (gray: extrapolated)")


def _wall(times_s: list[float]) -> list[datetime]:
    return [datetime.fromtimestamp(t, UTC) for t in times_s]


def plot_forecast(r: KnowledgeReport, ax: Any) -> None:
    """The scored forecast against what came, with the interval's upper bound and the load the planner used."""
    s = r.forecast.scored
    if s is None:
        return
    when = _wall(list(s.step_times_s))
    ax.plot(when, s.actual_per_s, label="actual", color="black")
    ax.plot(when, s.predicted_per_s, label=f"forecast ({s.record.model})", linestyle="--")
    if s.upper_per_s is not None:
        ax.fill_between(when, s.predicted_per_s, s.upper_per_s, alpha=0.2, label="up to the upper bound")
    if s.planned_per_s is not None:
        ax.plot(when, s.planned_per_s, label="planned for", color="tab:red")
    ax.set(xlabel="time (UTC)", ylabel="records/s", title=f"forecast made at {iso(s.record.time_s)} vs what came")
    ax.legend(fontsize="small")


def plot_forecast_accuracy(r: KnowledgeReport, ax: Any) -> None:
    """Each forecast's WAPE and the share of its steps the planned load covered, by when it was made."""
    rows = [a for a in r.forecast.accuracy if a.wape is not None]
    ax.plot(_wall([a.time_s for a in rows]), [a.wape for a in rows], marker=".", label="WAPE")
    covered = [a for a in rows if a.planned_coverage_ratio is not None]
    if covered:
        ax.plot(
            _wall([a.time_s for a in covered]),
            [a.planned_coverage_ratio for a in covered],
            marker=".",
            label="steps within the planned load",
        )
    ax.set(xlabel="forecast made at (UTC)", ylabel="ratio", title="forecast accuracy over time")
    ax.legend(fontsize="small")


def plot_decisions(r: KnowledgeReport, ax: Any) -> None:
    latest = r.decisions.latest
    when = _wall([x.time_s for x in latest])
    ax.step(when, [x.target_scaleout for x in latest], where="post", label="target")
    ax.step(when, [x.current_scaleout for x in latest], where="post", label="current")
    ax.set(xlabel="time (UTC)", ylabel="executors", title="scale-out, latest decisions")
    ax.legend()


def write_html(r: KnowledgeReport, out: Path) -> Path:
    """index.html with PNG plots of capacity per scale-out, forecast vs actual, forecast accuracy and scale-outs over
    time (wall clock, UTC)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    figures = []
    for name, draw, present in (
        ("capacity.png", plot_capacity, r.capacity),
        ("forecast.png", plot_forecast, r.forecast.scored),
        ("forecast_accuracy.png", plot_forecast_accuracy, r.forecast.accuracy),
        ("decisions.png", plot_decisions, r.decisions.latest),
    ):
        if present:
            fig, ax = plt.subplots(figsize=(7, 3.5))
            draw(r, ax)
            if draw is not plot_capacity:  # the others run along wall-clock time
                fig.autofmt_xdate()
            fig.tight_layout()
            png = io.BytesIO()
            fig.savefig(png, format="png", dpi=90)
            plt.close(fig)
            replace_file(out / name, png.getvalue())
            figures.append(name)
    body = "".join(f'<img src="{name}" alt="{name}"><br>' for name in figures)
    text = html.escape(format_text(r), quote=False)
    page = (
        f"<!doctype html><meta charset='utf-8'><title>daedalus-spark knowledge</title>"
        f"<h1>daedalus-spark: what the controller knows</h1><pre>{text}</pre>{body}"
        f"<p><a href='report.json'>report.json</a></p>"
    )
    replace_file(out / "report.json", redact(json.dumps(r.to_json(), indent=2, allow_nan=False)).encode())
    replace_file(out / "index.html", redact(page).encode())
    return out / "index.html"


def write_report(knowledge_path: str | Path, out: Path, config: Config | None = None) -> Path:
    return write_html(build(load_knowledge(knowledge_path, config)), out)


def report(args: argparse.Namespace) -> int:
    """The `report` subcommand (report/command.py)."""
    r = build(load_knowledge(args.knowledge, load_config(args.config)))
    if args.out:
        print(f"report written to {write_html(r, args.out)}")
    elif args.json:
        print(redact(json.dumps(r.to_json(), indent=2, allow_nan=False)))
    else:
        print(redact(format_text(r)))
    return 0
