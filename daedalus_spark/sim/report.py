"""Report: the simulator's side-by-side evaluation as per-second CSVs, PNG plots (paper Fig. 7 layout) and HTML."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from daedalus_spark.report.outfile import replace_file
from daedalus_spark.sim.metrics import METRIC_ORDER

if TYPE_CHECKING:
    from daedalus_spark.sim.evaluate import TraceEvaluation

# The table columns: every run metric but the two that only the JSON needs.
REPORT_METRICS = tuple(m for m in METRIC_ORDER if m not in ("final_lag_records", "behind_s"))


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "trace"


def write_csv(ev: TraceEvaluation, path: Path) -> None:
    """One row per second: the workload, then executors, lag, latency and processing flag of every policy."""
    runs = list(ev.runs.items())
    first = runs[0][1]
    columns = [np.arange(len(first.workload_per_s)), first.workload_per_s]
    header = ["second", "workload_per_s"]
    for name, run in runs:
        header += [f"{name}.scaleout", f"{name}.lag_records", f"{name}.latency_s", f"{name}.processing"]
        columns += [run.scaleout, run.lag_records, run.latency_s, run.processing.astype(int)]
    table = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    text = io.BytesIO()
    np.savetxt(text, table, delimiter=",", header=",".join(header), comments="", fmt="%.6g")
    replace_file(path, text.getvalue())


def _ecdf(latency: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(latency, kind="stable")
    w = weights[order] if weights.sum() > 0 else np.ones_like(latency)
    cum = np.cumsum(w)
    return latency[order], cum / cum[-1]


def plot_trace(ev: TraceEvaluation, path: Path) -> None:
    """Workload, executors per policy, latency ECDF weighted by records, and executor-hours relative to static."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    (ax_w, ax_n), (ax_l, ax_r) = axes
    first = next(iter(ev.runs.values()))
    hours = np.arange(len(first.workload_per_s)) / 3600.0
    ax_w.plot(hours, first.workload_per_s, lw=0.6, color="black")
    ax_w.set(title="(a) workload", xlabel="time [h]", ylabel="records/s")
    for name, run in ev.runs.items():
        ax_n.step(hours, run.scaleout, where="post", lw=1.0, label=name)
        x, y = _ecdf(run.latency_s, run.workload_per_s)
        ax_l.step(x, y, where="post", lw=1.0, label=name)
    ax_n.set(title="(b) executors", xlabel="time [h]", ylabel="executors")
    ax_n.legend(fontsize=8, ncol=2)
    ax_l.set(title="(c) latency ECDF (per record)", xlabel="latency [s]", ylabel="fraction of records", xscale="log")
    names = list(ev.metrics)
    values = [ev.metrics[n].vs_static for n in names]
    ax_r.bar(range(len(names)), values, color="tab:blue")
    ax_r.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax_r.set(title="(d) executor-hours relative to static max", ylabel="ratio")
    for i, v in enumerate(values):
        ax_r.text(i, v, f"{v:.2f}", ha="center", va="bottom", fontsize=8)
    fig.suptitle(ev.trace)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=90)
    plt.close(fig)
    replace_file(path, png.getvalue())


def _fmt(value: float | int) -> str:
    return (
        f"{value:.3g}"
        if isinstance(value, float) and abs(value) >= 1e4
        else (f"{value:.2f}" if isinstance(value, float) else str(value))
    )


def html_table(ev: TraceEvaluation) -> str:
    head = "".join(f"<th>{html.escape(m)}</th>" for m in REPORT_METRICS)
    rows = []
    for name, metrics in ev.metrics.items():
        fields = metrics.fields()
        cells = "".join(f"<td>{_fmt(fields[m])}</td>" for m in REPORT_METRICS)
        rows.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
    return f"<table><tr><th>policy</th>{head}</tr>{''.join(rows)}</table>"


def write_report(evaluations: list[TraceEvaluation], out_dir: Path, *, command: str = "") -> Path:
    """Write <trace>.csv and <trace>.png per trace and index.html; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sections = []
    for ev in evaluations:
        slug = _slug(Path(ev.trace).stem)
        write_csv(ev, out_dir / f"{slug}.csv")
        plot_trace(ev, out_dir / f"{slug}.png")
        sections.append(
            f"<h2>{html.escape(ev.trace)}</h2>{html_table(ev)}"
            f"<p><a href='{slug}.csv'>per-second CSV</a></p><img src='{slug}.png' alt='{html.escape(ev.trace)}'>"
        )
    style = "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>daedalus-spark simulation</title>"
        f"<style>{style}</style></head><body><h1>Simulated autoscaling, side by side</h1>"
        f"<p><code>{html.escape(command)}</code></p>{''.join(sections)}</body></html>\n"
    )
    path = out_dir / "index.html"
    replace_file(path, page.encode())
    return path
