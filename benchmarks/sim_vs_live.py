"""Benchmark: the demo's trace and config run live on the local Spark cluster and in the simulator with the `demo`
job profile (the demo's calibrated job), side by side — executor-seconds, rescales, lag p95 and the final capacity
table — and the live capacity against the demo's calibrated capacity at the latency objective at each scale-out
(deploy/demo.yaml `demo.capacity_lines_per_s`).

Usage: python benchmarks/sim_vs_live.py [--out out/sim_vs_live] [--live-dir DIR (reuse a finished demo run)]
       [--seeds 3]. The live run is `make demo` (about 10 minutes); it stops everything it started.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
from live_capacity import calibrated

from daedalus_spark.config import Config, load_config
from daedalus_spark.controller import Controller
from daedalus_spark.demo.live import DEMO_CONFIG, DemoPlan, run_demo
from daedalus_spark.demo.processes import INTERRUPTED
from daedalus_spark.sim.daedalus import DaedalusPolicy
from daedalus_spark.sim.jobmodel import load_job_model
from daedalus_spark.sim.runner import SimSetup, make_setup, run_policy

ROOT = Path(__file__).resolve().parent.parent


def demo_workload(plan: DemoPlan) -> np.ndarray:
    """Records per wall second as the demo's generator paces the trace (linear within each trace second)."""
    pacer = plan.pacer()
    due = np.array([pacer.due(w) for w in range(int(plan.duration_s) + 1)], dtype=float)
    return np.diff(due)


def demo_config(plan: DemoPlan) -> Config:
    base = load_config(DEMO_CONFIG)
    return base.model_copy(
        update={"controller": base.controller.model_copy(update={"max_scaleout": plan.max_scaleout})}
    )


def demo_policy(plan: DemoPlan, config: Config) -> DaedalusPolicy:
    """Daedalus as the demo starts it: its forecaster given the topic's earlier cycles (`plan.history_cycles`), as
    the live controller reads them back from Prometheus."""
    policy = DaedalusPolicy(config)
    if plan.history_cycles > 0:
        past = np.tile(demo_workload(plan), plan.history_cycles).tolist()

        def read_history(controller: Controller) -> None:
            controller.learn_past_workload(past, step_s=1.0, end_s=0.0, forecast="afresh")

        policy.warm = read_history
    return policy


def demo_setup(plan: DemoPlan, config: Config, seed: int) -> SimSetup:
    """The demo's workload on the `demo` job profile (its calibrated job), started at the demo's initial executors."""
    job_model = load_job_model("demo").model_copy(update={"initial_scaleout": plan.initial_executors})
    return make_setup(demo_workload(plan), job_model, config, seed)


def simulated(plan: DemoPlan, seed: int, config: Config | None = None) -> dict[str, Any]:
    config = config or demo_config(plan)
    setup = demo_setup(plan, config, seed)
    policy = demo_policy(plan, config)
    result = run_policy(setup, policy)
    table = policy.controller.knowledge.history.latest_table if policy.controller else None
    return {
        "executor_seconds": float(result.scaleout.sum()),
        "rescales": len(result.rescales),
        "lag_p95_records": float(np.percentile(result.lag_records, 95)),
        "capacity_per_scaleout": list(table.per_scaleout_per_s) if table else [],
        "true_capacity_per_scaleout": [setup.capacity.capacity(n) for n in range(1, plan.max_scaleout + 1)],
        "capacity_by_tick": [
            (d.current_scaleout, d.evidence.tick.capacity_current_per_s if d.evidence.tick else None)
            for d in policy.decisions
        ],
        "no_valid_scaleout_use_max": sum(1 for d in policy.decisions if d.reason == "no_valid_scaleout_use_max"),
    }


def run_live(out: Path, plan: DemoPlan) -> None:
    """One live demo into `out`; an interrupted one (everything it started stopped) ends the benchmark there."""
    if run_demo(out, plan) == INTERRUPTED:
        raise SystemExit(INTERRUPTED)


def live(plan: DemoPlan, out: Path, reuse: Path | None) -> dict[str, Any]:
    if reuse is None:
        run_live(out, plan)
        reuse = out
    summary = json.loads((reuse / "summary.json").read_text())
    decisions = [json.loads(line) for line in (reuse / "decisions.jsonl").read_text().splitlines() if line.strip()]
    report = json.loads((reuse / "report.json").read_text()) if (reuse / "report.json").exists() else {}
    capacity = report.get("capacity") or {}
    return {
        "executor_seconds": summary["executor_seconds"],
        "rescales": summary["scale_outs"] + summary["scale_ins"],
        "lag_p95_records": summary["lag_p95_records"],
        "capacity_per_scaleout": [p["capacity_per_s"] for p in capacity.get("per_scaleout", [])],
        "observed_scaleouts": [p["scaleout"] for p in capacity.get("per_scaleout", []) if p["observed"]],
        "capacity_by_tick": [(d["current"], d["evidence"].get("capacity_current_per_s")) for d in decisions],
        "no_valid_scaleout_use_max": sum(1 for d in decisions if d["reason"] == "no_valid_scaleout_use_max"),
        "executor_seconds_vs_static_max": summary["executor_seconds_vs_static_max"],
    }


def capacity_checks(run: dict[str, Any], saturation: dict[int, float]) -> dict[str, Any]:
    """Against `saturation` (the calibration's at the objective, or the simulated job's true capacity), the goals:
    every tick's capacity within 20 % of it at its scale-out, the final table within 15 % at the observed
    scale-outs, and at most one no_valid_scaleout_use_max after the first capacity."""
    ticks = [(n, c) for n, c in run["capacity_by_tick"] if c is not None and math.isfinite(c)]
    errors = [abs(c / saturation[n] - 1) for n, c in ticks if n in saturation]
    table = run["capacity_per_scaleout"]
    final = {n: abs(table[n - 1] / saturation[n] - 1) for n in run.get("observed_scaleouts", []) if n in saturation}
    return {
        "ticks_with_capacity": len(ticks),
        "ticks_within_20pct": sum(e <= 0.2 for e in errors),
        "ticks_compared": len(errors),
        "worst_tick_error": max(errors, default=None),
        "final_table_error_at_observed": final,
        "capacity_range_per_s": [min(c for _, c in ticks), max(c for _, c in ticks)] if ticks else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "sim_vs_live")
    parser.add_argument("--live-dir", type=Path, default=None, help="a finished demo run to read instead of running")
    parser.add_argument("--seeds", type=int, default=3, help="simulator runs (seeds 1..N); the median is compared")
    args = parser.parse_args()
    plan = DemoPlan()
    live_run = live(plan, args.out / "live", args.live_dir)
    sims = [simulated(plan, seed) for seed in range(1, args.seeds + 1)]
    saturation = calibrated()

    def median(key: str) -> float:
        return float(np.median([s[key] for s in sims]))

    rows = [
        ("executor-seconds", live_run["executor_seconds"], median("executor_seconds"), 0.10),
        ("rescales", live_run["rescales"], median("rescales"), None),
        ("lag p95 (records)", live_run["lag_p95_records"], median("lag_p95_records"), 0.30),
    ]
    print(f"{'':20} {'live':>12} {'simulated':>12}  goal")
    for name, a, b, rel in rows:
        goal = f"within {rel:.0%}: {abs(b / a - 1) <= rel}" if rel and a else f"within 1: {abs(a - b) <= 1}"
        print(f"{name:20} {a:12,.0f} {b:12,.0f}  {goal}")
    print("final capacity table (records/s per scale-out):")
    print(f"  live:      {[round(c) for c in live_run['capacity_per_scaleout']]}")
    print(f"  simulated: {[round(c) for c in sims[0]['capacity_per_scaleout']]} (seed 1)")
    print(f"  simulated job's true capacity: {[round(c) for c in sims[0]['true_capacity_per_scaleout']]}")
    print(f"  calibrated capacity at the objective (deploy/demo.yaml): {saturation}")
    truth = dict(enumerate(sims[0]["true_capacity_per_scaleout"], start=1))
    sims[0]["observed_scaleouts"] = sorted({n for n, _ in sims[0]["capacity_by_tick"]})
    checks = {"live": capacity_checks(live_run, saturation), "simulated": capacity_checks(sims[0], truth)}
    for side, c in checks.items():
        print(f"capacity goals ({side}): {json.dumps(c)}")
    print(
        f"no_valid_scaleout_use_max: live {live_run['no_valid_scaleout_use_max']}, "
        f"simulated {sims[0]['no_valid_scaleout_use_max']}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"live": live_run, "simulated": sims, "calibrated_capacity": saturation, "checks": checks}
    (args.out / "sim_vs_live.json").write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
