"""Tuning (I/O edge): the answer as a terminal table, CSVs, a Pareto PNG, an HTML page and JSON under --out."""

from __future__ import annotations

import csv
import dataclasses
import html
import io
from collections.abc import Callable
from pathlib import Path

from daedalus_spark.report.jsonout import strict_json
from daedalus_spark.report.outfile import replace_file
from daedalus_spark.tune.result import CandidateFigures, Risk, TuneResult
from daedalus_spark.tune.task import ROW_FIELDS, WindowRow

TABLE: tuple[tuple[str, Callable[[CandidateFigures], str]], ...] = (
    ("cand.", lambda c: str(c.candidate)),
    ("exec-h", lambda c: f"{c.select.executor_hours:.1f}"),
    ("viol.", lambda c: str(c.select.violations)),
    ("resc/h", lambda c: f"{c.select.rescales_per_hour:.2f}"),
    ("held-out exec-h", lambda c: f"{c.holdout.executor_hours:.1f}"),
    ("viol.", lambda c: str(c.holdout.violations)),
    ("resc/h", lambda c: f"{c.holdout.rescales_per_hour:.2f}"),
    ("knobs", lambda c: ", ".join(f"{k}={v}" for k, v in c.knobs.items()) or "(your config)"),
)


def front_table(result: TuneResult) -> str:
    """The Pareto front of the older part (and the config as it is), with the held-out figures beside."""
    rows = [c for c in result.candidates if c.pareto or c.candidate == 0]
    cells = [[title for title, _ in TABLE]] + [[f(c) for _, f in TABLE] for c in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(TABLE))]
    lines = [
        "  ".join(
            c.ljust(w) if i == len(TABLE) - 1 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in cells
    ]
    return "\n".join(lines)


def summary(result: TuneResult) -> str:
    rec = result.recommendation
    h, cur, risk = rec.holdout, rec.current_holdout, rec.risk
    budget = result.rescale_budget_per_hour
    head = [
        f"Pareto front (chosen on the older part; held out: the newest {result.inputs['holdout_hours']:.1f} h)",
        front_table(result),
    ]
    if rec.candidate == 0:
        tail = [f"recommendation: keep your config ({rec.note or 'no candidate saves on the older part'})"]
    else:
        tail = [
            f"recommendation: candidate {rec.candidate}: " + ", ".join(f"{k}: {v}" for k, v in rec.changes.items()),
            f"  held out: {h.executor_hours:.1f} executor-h against {cur.executor_hours:.1f} with your config "
            f"(saving {rec.saving_ratio:.1%}); risk: {risk.violations} violations, {risk.rescales} "
            f"rescales ({risk.rescales_per_hour:.2f}/h; {_budget(budget, risk)})",
        ]
    return "\n".join(head + tail)


def _budget(per_hour: float, risk: Risk) -> str:
    if per_hour <= 0:
        return "no rescale budget"
    verdict = "within" if risk.within_budget else "OVER"
    return f"{verdict} the budget: {per_hour:g}/h with its full bucket allows {risk.allowed_rescales:.1f}"


def write_rows(path: Path, rows: list[WindowRow]) -> None:
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(ROW_FIELDS))
    writer.writeheader()
    writer.writerows(dataclasses.asdict(r) for r in rows)
    replace_file(path, text.getvalue().encode())


def plot_front(result: TuneResult, path: Path) -> None:
    """Executor-hours against rescales per hour on the older part; red: with violations; the front joined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cands = result.candidates
    fig, ax = plt.subplots(figsize=(7, 4))
    for c in cands:
        s = c.select
        ax.scatter(s.executor_hours, s.rescales_per_hour, s=18, color="tab:red" if s.violations else "tab:blue")
    front = sorted((c.select for c in cands if c.pareto), key=lambda s: s.executor_hours)
    ax.plot([s.executor_hours for s in front], [s.rescales_per_hour for s in front], color="gray", lw=0.8)
    base, chosen = cands[0].select, cands[result.recommendation.candidate].select
    ax.scatter(
        base.executor_hours,
        base.rescales_per_hour,
        s=90,
        marker="s",
        facecolors="none",
        edgecolors="black",
        label="your config",
    )
    ax.scatter(
        chosen.executor_hours, chosen.rescales_per_hour, s=160, marker="*", color="tab:green", label="recommended"
    )
    ax.set(
        xlabel="executor-hours (older part)",
        ylabel="rescales per hour",
        title="candidates (blue: 0 violations, red: some); line: Pareto front",
    )
    ax.legend(loc="best")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=90)
    plt.close(fig)
    replace_file(path, png.getvalue())


def candidates_table(result: TuneResult) -> str:
    """Every candidate as an HTML table row, the recommended one in bold, those on the front marked."""
    chosen = result.recommendation.candidate
    head = "".join(f"<th>{html.escape(title)}</th>" for title, _ in TABLE) + "<th>front</th>"
    rows = []
    for c in result.candidates:
        cells = "".join(f"<td>{html.escape(f(c))}</td>" for _, f in TABLE) + f"<td>{'yes' if c.pareto else ''}</td>"
        style = " style='font-weight:bold'" if c.candidate == chosen else ""
        rows.append(f"<tr{style}>{cells}</tr>")
    return f"<table border='1' cellpadding='3'><tr>{head}</tr>{''.join(rows)}</table>"


def write_html(result: TuneResult, path: Path) -> None:
    rec = result.recommendation
    page = (
        "<!doctype html><meta charset='utf-8'><title>daedalus-spark tune</title>"
        "<h1>daedalus-spark tune</h1>"
        f"<p>history: {html.escape(result.inputs['history'])}; job: {html.escape(result.inputs['job'])}</p>"
        f"<pre>{html.escape(summary(result))}</pre><img src='pareto.png' alt='Pareto front'>"
        f"<h2>recommended config (diff against yours)</h2><pre>{html.escape(rec.diff or '(no change)')}</pre>"
        "<h2>every candidate (exec-h, violations, rescales/h: older part, then held out)</h2>"
        f"{candidates_table(result)}"
        "<p><a href='tune.json'>tune.json</a> · <a href='rows.csv'>rows.csv</a> (every candidate x window) · "
        "<a href='recommended.yaml'>recommended.yaml</a></p>"
    )
    replace_file(path, page.encode())


def write_all(out: Path, result: TuneResult, rows: list[WindowRow]) -> None:
    """tune.json, rows.csv, recommended.yaml and .diff, pareto.png, index.html under `out`, each written whole and
    renamed into place (a symlink named like one is replaced, never written through)."""
    out.mkdir(parents=True, exist_ok=True)
    replace_file(out / "tune.json", (strict_json(result.to_json()) + "\n").encode())
    write_rows(out / "rows.csv", rows)
    replace_file(out / "recommended.yaml", result.recommendation.yaml.encode())
    replace_file(out / "recommended.diff", result.recommendation.diff.encode())
    plot_front(result, out / "pareto.png")
    write_html(result, out / "index.html")
