"""Benchmark: the demo's compressed trace, live on the local Spark cluster once per autoscaler — ours, Spark's dynamic
allocation, the DStreams batch-duration rule, static at the largest scale-out — and the same in the simulator with
the `local` job profile: executor-seconds, lag p95 and max (records and seconds of input), rescales, records in
against out. Writes out/live_compare/{compare.json,timeline.png}.

Usage: python benchmarks/live_compare.py [--duration 240] [--autoscalers daedalus,spark-da,batch-ratio,static]
       [--reuse] [--seeds 3]. Each live run takes the duration plus about 2 minutes of start, drain and stop; it
stops everything it started. --reuse reads finished runs from --out instead of running them.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from sim_vs_live import demo_config, demo_setup  # the benchmarks' shared helpers, next to this file

from daedalus_spark.demo.live import AUTOSCALERS, DemoPlan, run_demo
from daedalus_spark.demo.summary import lag_seconds, settled_rescales
from daedalus_spark.sim.policies import make_policy
from daedalus_spark.sim.runner import run_policy

ROOT = Path(__file__).resolve().parent.parent
# The simulator's policy for each live autoscaler, with the time settings the live run compresses the same way.
SIMULATED = {
    "daedalus": "daedalus:paper",  # deploy/demo.yaml's planner
    "spark-da": "spark-da:executor_idle_timeout_s=10",
    "batch-ratio": "batch-ratio:scaling_interval_s=10",  # one round per 10-s loop tick, as live
    "static": "static:{max}",
}
COLUMNS = ("executor_seconds", "lag_p95_records", "lag_max_records", "lag_p95_s", "lag_max_s", "rescales")


def live(plan: DemoPlan, out: Path, reuse: bool) -> dict[str, Any]:
    if not (reuse and (out / "summary.json").exists()):
        run_demo(out, plan)
    s = json.loads((out / "summary.json").read_text())
    return {**{k: s[k] for k in COLUMNS[:-1]}, "rescales": s["rescales_live"], **_counts(s)}


def _counts(s: dict[str, Any]) -> dict[str, Any]:
    return {"records_in": s["records_in"], "records_out": s["records_out"], "records_exact": s["records_exact"]}


def simulated(plan: DemoPlan, autoscaler: str, seed: int) -> dict[str, Any]:
    config = demo_config(plan)
    policy = make_policy(SIMULATED[autoscaler].format(max=plan.max_scaleout), config)
    result = run_policy(demo_setup(plan, config, seed), policy)
    t = np.arange(len(result.lag_records), dtype=float)
    lag_s = lag_seconds(t, np.cumsum(result.workload_per_s), result.lag_records)
    return {
        "executor_seconds": float(result.scaleout.sum()),
        "lag_p95_records": float(np.percentile(result.lag_records, 95)),
        "lag_max_records": float(result.lag_records.max()),
        "lag_p95_s": float(np.percentile(lag_s, 95)),
        "lag_max_s": float(lag_s.max()),
        "rescales": settled_rescales(t, result.scaleout.astype(float)),  # counted as live: settled levels
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: float(np.median([r[k] for r in runs])) for k in COLUMNS}


def table(rows: dict[str, dict[str, Any]], target_s: float) -> list[str]:
    head = f"{'':12} {'exec-s':>8} {'lag p95':>9} {'lag max':>9} {'p95 s':>6} {'max s':>6} {'rescales':>8}  records"
    lines = [head]
    for name, r in rows.items():
        counts = ""
        if "records_in" in r:
            exact = "exact" if r["records_exact"] else "NOT exact"
            counts = f"{_n(r['records_in'])} in, {_n(r['records_out'])} out: {exact}"
        within = "" if r["lag_p95_s"] is None or r["lag_p95_s"] <= target_s else "  (lag p95 over target)"
        lines.append(
            f"{name:12} {_n(r['executor_seconds']):>8} {_n(r['lag_p95_records']):>9} {_n(r['lag_max_records']):>9} "
            f"{_n(r['lag_p95_s'], 1):>6} {_n(r['lag_max_s'], 1):>6} {_n(r['rescales']):>8}  {counts}{within}"
        )
    return lines


def _n(value: float | None, digits: int = 0) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:,.{digits}f}"


def verdict(rows: dict[str, dict[str, Any]], target_s: float) -> list[str]:
    """Ours against each rival: executor-seconds saved, among those whose lag p95 stays within the target."""
    ours = rows.get("daedalus")
    if ours is None:
        return []
    lines = []
    for name, r in rows.items():
        if name == "daedalus":
            continue
        saving = 1 - ours["executor_seconds"] / r["executor_seconds"] if r["executor_seconds"] else math.nan
        kept = r["lag_p95_s"] is not None and r["lag_p95_s"] <= target_s
        lines.append(
            f"  daedalus against {name}: {abs(saving):.0%} {'fewer' if saving >= 0 else 'MORE'} executor-seconds"
            + ("" if kept else f" (its lag p95 {_n(r['lag_p95_s'], 1)} s misses the {target_s:g}-s target)")
        )
    return lines


def plot(out: Path, names: list[str], plan: DemoPlan) -> None:
    """Executors and lag over time, one column per autoscaler, from the live runs' timelines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(names), figsize=(4 * len(names), 6), sharex=True, sharey="row", squeeze=False)
    for col, name in enumerate(names):
        with (out / name / "timeline.csv").open() as f:
            rows = list(csv.DictReader(f))
        t = [float(r["t_s"]) for r in rows]
        axes[0][col].step(t, [float(r["executors"]) for r in rows], where="post")
        axes[0][col].set_title(name)
        axes[1][col].plot(t, [float(r["lag_records"]) for r in rows], color="tab:red")
        axes[1][col].set_xlabel("seconds since start")
    axes[0][0].set_ylabel("executors live")
    axes[1][0].set_ylabel("consumer lag (records)")
    fig.suptitle(f"WordCount on {plan.max_scaleout} local executors max, the demo trace in {plan.duration_s:.0f} s")
    fig.tight_layout()
    fig.savefig(out / "timeline.png", dpi=90)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "live_compare")
    parser.add_argument("--duration", type=float, default=240.0, help="wall seconds of each load cycle")
    parser.add_argument("--autoscalers", default=",".join(AUTOSCALERS))
    parser.add_argument("--reuse", action="store_true", help="read finished runs from --out instead of running")
    parser.add_argument("--seeds", type=int, default=3, help="simulator runs per autoscaler (median)")
    args = parser.parse_args()
    names = [n.strip() for n in args.autoscalers.split(",") if n.strip()]
    unknown = [n for n in names if n not in AUTOSCALERS]
    if unknown:
        parser.error(f"unknown autoscaler {unknown[0]!r}; known: {', '.join(AUTOSCALERS)}")
    # The demo's rates (a peak of ~3 of the 4 executors), its load cycle played in --duration instead of 480 s.
    plan = DemoPlan(duration_s=args.duration, scale=DemoPlan().scale * args.duration / DemoPlan().duration_s)
    target_s = demo_config(plan).controller.target_recovery_s
    live_rows = {n: live(replace(plan, autoscaler=n), args.out / n, args.reuse) for n in names}
    sim_rows = {n: median_run([simulated(plan, n, seed) for seed in range(1, args.seeds + 1)]) for n in names}
    print(f"live, local cluster (recovery target {target_s:g} s):")
    print("\n".join(table(live_rows, target_s) + verdict(live_rows, target_s)))
    print(f"simulated, `local` profile (median of {args.seeds} seeds):")
    print("\n".join(table(sim_rows, target_s) + verdict(sim_rows, target_s)))
    plot(args.out, names, plan)
    (args.out / "compare.json").write_text(json.dumps({"live": live_rows, "simulated": sim_rows}, indent=2))
    print(f"written: {args.out / 'compare.json'}, {args.out / 'timeline.png'}")
    failed = [
        f"{n}: {r['records_in']} appended, {r['records_out']} counted"
        for n, r in live_rows.items()
        if not r["records_exact"]
    ]
    for line in failed:
        print(f"live_compare check failed: words counted exactly, {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
