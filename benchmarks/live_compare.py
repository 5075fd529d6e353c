"""Benchmark: the demo's compressed trace, live on the local Spark cluster once per autoscaler — ours, Spark's dynamic
allocation, the DStreams batch-duration rule, static at the largest scale-out — and the same in the simulator with
the `demo` job profile (the job's calibration), beside the offline optimum there with and without the controller's
rescale budget: executor-seconds, lag p95 and max (records and seconds of input), rescales, records in against out.
Writes out/live_compare/{compare.json,timeline.png}.

Each live line is marked pass or fail by the acceptance rule (daedalus_spark/sim/metrics.py `passes`: latency within
controller.target_latency_s outside recoveries, every recovery within target_recovery_s) on its timeline, read
per second; `static:N` holds N executors (`static` alone: all of them), and `static:all` runs every N from 1 to the
maximum, so the cheapest static that passes is on the same trace. Each live line's executor-seconds are then given
as a ratio to that static and to each optimum. The optimum is solved on the quiet machine's calibration: where the
live machine is busier, its executors carry less, so the ratio to the optimum errs high, never low.

Usage: python benchmarks/live_compare.py [--duration 480] [--autoscalers daedalus,spark-da,batch-ratio,static:all]
       [--runs 1] [--reuse] [--seeds 3]. Each live run takes the duration plus about 2 minutes of start, drain and
stop; it stops everything it started. --runs N runs each line N times and shows the median of each figure (a line
passes when most of its runs do). --reuse reads finished runs from --out instead of running them.
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

# the benchmarks' shared helpers, next to this file
from sim_vs_live import demo_config, demo_policy, demo_setup, run_live

from daedalus_spark.demo.live import AUTOSCALERS, DemoPlan
from daedalus_spark.demo.summary import lag_seconds, settled_rescales
from daedalus_spark.sim.job import Rescale
from daedalus_spark.sim.metrics import passes
from daedalus_spark.sim.optimum import run_optimum, solve_optimum
from daedalus_spark.sim.policies import make_policy
from daedalus_spark.sim.runner import RunResult, run_policy

ROOT = Path(__file__).resolve().parent.parent
# The simulator's policy for each live autoscaler, with the time settings the live run compresses the same way.
SIMULATED = {
    "daedalus": "daedalus",  # deploy/demo.yaml's planner: the default (horizon)
    "spark-da": "spark-da:executor_idle_timeout_s=10",
    "batch-ratio": "batch-ratio:scaling_interval_s=10",  # one round per 10-s loop tick, as live
    "static": "static:{max}",
}
COLUMNS = ("executor_seconds", "lag_p95_records", "lag_max_records", "lag_p95_s", "lag_max_s", "rescales")


def live(plan: DemoPlan, out: Path, reuse: bool, targets: tuple[float, float]) -> dict[str, Any]:
    if not (reuse and (out / "summary.json").exists()):
        run_live(out, plan)
    s = json.loads((out / "summary.json").read_text())
    with (out / "timeline.csv").open() as f:
        result = timeline_result(list(csv.DictReader(f)), s["load_s"])
    ok = passes(result, target_latency_s=targets[0], target_recovery_s=targets[1])
    return {**{k: s[k] for k in COLUMNS[:-1]}, "rescales": s["rescales_live"], **_counts(s), "passes": ok}


def run_dir(out: Path, name: str, k: int) -> Path:
    """The k-th live run of a line: `static-3`, then `static-3.run2`, ..."""
    return out / (name.replace(":", "-") + ("" if k == 1 else f".run{k}"))


def median_live(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A line's live runs as one: the median of each figure, passing when most runs pass, counted exactly when every
    run was (the counts shown: the first run's that was not, else the first's)."""
    counts = next((r for r in runs if not r["records_exact"]), runs[0])
    return median_run(runs) | _counts(counts) | {"runs": len(runs)}


def timeline_result(rows: list[dict[str, str]], load_s: float) -> RunResult:
    """A live run's timeline over its load cycle, per second, as the acceptance rule reads a simulated run: executors
    held (the last sample's), lag and records in interpolated, latency the age of the oldest unread record, the
    rescales timed as the simulator times them (`live_rescales`), and the query's start in effect at its first commit
    (the load begins with the query)."""
    kept = [r for r in rows if all(r[k] not in ("", "nan") for k in ("executors", "lag_records", "records_in"))]
    t = np.array([float(r["t_s"]) for r in kept])
    if t.size < 2:
        raise ValueError(f"a timeline of {t.size} complete samples: nothing to judge")
    grid = np.arange(math.ceil(t[0]), math.floor(min(t[-1], t[0] + load_s)) + 1, dtype=float)
    executors = np.array([float(r["executors"]) for r in kept])[np.searchsorted(t, grid, side="right") - 1]
    lag = np.interp(grid, t, [float(r["lag_records"]) for r in kept])
    records_in = np.interp(grid, t, [float(r["records_in"]) for r in kept])
    workload = np.diff(np.concatenate(([records_in[0]], records_in)))
    committed = np.flatnonzero(records_in - lag > records_in[0] - lag[0] + 0.5)
    first_commit = int(committed[0]) if committed.size else grid.size
    return RunResult(
        policy="live",
        workload_per_s=workload,
        scaleout=executors.astype(int),
        processing=np.ones(grid.size, dtype=bool),
        processed_per_s=np.maximum(workload - np.diff(np.concatenate(([lag[0]], lag))), 0.0),
        lag_records=lag,
        latency_s=lag_seconds(grid, records_in, lag),
        capacity_per_s=np.full(grid.size, math.nan),
        rescales=live_rescales(rows, grid, executors.astype(int)),
        start=Rescale(0, 0, int(executors[0]), first_commit, 0.0, kind="start"),
    )


def _column(rows: list[dict[str, str]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """The samples' times and values of one column, where it has a value."""
    pairs = [(float(r["t_s"]), float(r[name])) for r in rows if r.get(name, "") not in ("", "nan")]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def live_rescales(rows: list[dict[str, str]], grid: np.ndarray, executors: np.ndarray) -> tuple[Rescale, ...]:
    """One in-place rescale per change of the executors held, timed as the simulator times one (sim/job.py
    `Rescale`): from its request, the change of the applied target before it (the change itself where the timeline
    has no target: Spark's dynamic allocation requests executors itself). Joined executors take effect once the
    first batch planned after they joined has committed: the second commit after the join, the first one's batch
    may have started before it (`stall_s`; none where the timeline has no records out). A leaving executor's
    capacity is gone when it leaves (`leave_s`). Where the timeline has targets, changes one request made one after
    the other (executors joining one by one) are one rescale."""
    target_t, target = _column(rows, "target")
    requests = target_t[1:][np.diff(target) != 0] if target.size else target_t
    out_t, out = _column(rows, "records_out")
    commits = out_t[1:][np.diff(out) > 0] if out.size else out_t
    t0 = float(grid[0])
    rescales: list[Rescale] = []
    previous_change_s = -math.inf
    for i in np.flatnonzero(np.diff(executors)) + 1:
        change_s = float(grid[i])
        asked = requests[(requests > previous_change_s) & (requests <= change_s)]
        request_s = float(asked[-1]) if asked.size else change_s
        before, after = int(executors[i - 1]), int(executors[i])
        same_way = rescales and (after > before) == (rescales[-1].to_scaleout > rescales[-1].from_scaleout)
        if target.size and not asked.size and same_way:
            last = rescales.pop()  # the same request, carried on
            request_s, before = t0 + last.time_s, last.from_scaleout
        previous_change_s = change_s
        wait_s = change_s - request_s
        if after > before:
            done = commits[commits > change_s]
            stall_s = 0.0 if not out.size else (float(done[1]) if done.size > 1 else float(grid[-1])) - change_s
            timing = {"registration_s": wait_s, "stall_s": stall_s}
        else:
            timing = {"leave_s": wait_s}
        rescales.append(Rescale(max(0, round(request_s - t0)), before, after, 0, 0.0, kind="in_place", **timing))
    return tuple(rescales)


def autoscaler_runs(names: list[str], max_scaleout: int) -> dict[str, tuple[str, int]]:
    """Line name -> (autoscaler, executors held when static); `static:all` is static:1 .. static:max."""
    runs: dict[str, tuple[str, int]] = {}
    for name in names:
        kind, _, count = name.partition(":")
        if kind not in AUTOSCALERS or (count and kind != "static"):
            raise ValueError(f"unknown autoscaler {name!r}; known: {', '.join(AUTOSCALERS)}, static:N, static:all")
        if kind != "static":
            runs[name] = (kind, 0)
        elif count == "all":
            runs |= {f"static:{n}": ("static", n) for n in range(1, max_scaleout + 1)}
        elif not count or (count.isdigit() and 1 <= int(count) <= max_scaleout):
            runs[f"static:{count or max_scaleout}"] = ("static", int(count or max_scaleout))
        else:
            raise ValueError(f"{name!r}: expected static:N with N in 1..{max_scaleout}, or static:all")
    return runs


def _counts(s: dict[str, Any]) -> dict[str, Any]:
    return {"records_in": s["records_in"], "records_out": s["records_out"], "records_exact": s["records_exact"]}


def simulated(plan: DemoPlan, autoscaler: str, seed: int, targets: tuple[float, float]) -> dict[str, Any]:
    config = demo_config(plan)
    if autoscaler == "daedalus":
        policy = demo_policy(plan, config)
    else:
        policy = make_policy(SIMULATED[autoscaler].format(max=plan.static_executors or plan.max_scaleout), config)
    return _sim_row(run_policy(demo_setup(plan, config, seed), policy), targets)


def optimum(plan: DemoPlan, seed: int, targets: tuple[float, float], *, limited: bool) -> dict[str, Any]:
    """The offline optimum on the `demo` job profile (the quiet machine's calibration): the fewest executor-seconds
    that meet the acceptance rule; `limited`, held to the controller's rescale budget over the trace (`optimum:R`)."""
    config = demo_config(plan)
    setup = demo_setup(plan, config, seed)
    budget = None
    if limited:
        budget = math.floor(config.controller.max_rescales_per_hour * len(setup.workload_per_s) / 3600.0 + 1e-9)
    return _sim_row(run_optimum(setup, solve_optimum(setup, max_rescales=budget)), targets)


def _sim_row(result: RunResult, targets: tuple[float, float]) -> dict[str, Any]:
    t = np.arange(len(result.lag_records), dtype=float)
    lag_s = lag_seconds(t, np.cumsum(result.workload_per_s), result.lag_records)
    return {
        "executor_seconds": float(result.scaleout.sum()),
        "lag_p95_records": float(np.percentile(result.lag_records, 95)),
        "lag_max_records": float(result.lag_records.max()),
        "lag_p95_s": float(np.percentile(lag_s, 95)),
        "lag_max_s": float(lag_s.max()),
        "rescales": settled_rescales(t, result.scaleout.astype(float)),  # counted as live: settled levels
        "passes": passes(result, target_latency_s=targets[0], target_recovery_s=targets[1]),
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure; passes when the median run would: when most runs pass."""
    return {k: float(np.median([r[k] for r in runs])) for k in COLUMNS} | {
        "passes": 2 * sum(r["passes"] for r in runs) > len(runs)
    }


def table(rows: dict[str, dict[str, Any]]) -> list[str]:
    width = max(12, *(len(name) for name in rows))
    head = f"{'':{width}} {'exec-s':>8} {'lag p95':>9} {'lag max':>9} {'p95 s':>6} {'max s':>6} {'rescales':>8}  rule"
    lines = [head]
    for name, r in rows.items():
        counts = ""
        if "records_in" in r:
            exact = "exact" if r["records_exact"] else "NOT exact"
            counts = f"  {_n(r['records_in'])} in, {_n(r['records_out'])} out: {exact}"
        lines.append(
            f"{name:{width}} {_n(r['executor_seconds']):>8} {_n(r['lag_p95_records']):>9} "
            f"{_n(r['lag_max_records']):>9} {_n(r['lag_p95_s'], 1):>6} {_n(r['lag_max_s'], 1):>6} "
            f"{_n(r['rescales']):>8}  {'PASS' if r['passes'] else 'FAIL'}{counts}"
        )
    return lines


def _n(value: float | None, digits: int = 0) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:,.{digits}f}"


def verdict(rows: dict[str, dict[str, Any]]) -> list[str]:
    """Ours against each rival: executor-seconds saved, and whether the rival passes the acceptance rule."""
    ours = rows.get("daedalus")
    if ours is None:
        return []
    lines = []
    for name, r in rows.items():
        if name == "daedalus":
            continue
        saving = 1 - ours["executor_seconds"] / r["executor_seconds"] if r["executor_seconds"] else math.nan
        lines.append(
            f"  daedalus against {name}: {abs(saving):.0%} {'fewer' if saving >= 0 else 'MORE'} executor-seconds"
            + ("" if r["passes"] else " (it fails the acceptance rule)")
        )
    return lines


def yardsticks(rows: dict[str, dict[str, Any]], optima: dict[str, dict[str, Any]]) -> list[str]:
    """Each live line's executor-seconds as a ratio to the cheapest static that passes and to each optimum."""
    passing = [n for n in rows if n.startswith("static:") and rows[n]["passes"]]
    # An optimum whose schedule, played in the simulator, fails the rule is a lower bound only (its relaxation lets
    # a backlog's batches amortize their fixed cost without counting their duration into the latency).
    bases = {
        n + ("" if r["passes"] else " (a lower bound: its schedule fails the rule when played)"): r["executor_seconds"]
        for n, r in optima.items()
    }
    if passing:
        cheapest = min(passing, key=lambda n: rows[n]["executor_seconds"])
        bases = {f"cheapest static that passes ({cheapest})": rows[cheapest]["executor_seconds"]} | bases
    lines = [f"  {i}. {name}: {_n(value)} executor-s" for i, (name, value) in enumerate(bases.items(), 1)]
    if not passing:
        lines.append("  (no static that passes was run)")
    for name, r in rows.items():
        ratios = "  ".join(f"{i}. {r['executor_seconds'] / v:.2f}" for i, v in enumerate(bases.values(), 1) if v > 0)
        lines.append(f"  {name:12} {'PASS' if r['passes'] else 'FAIL'}  {ratios}")
    return lines


def plot(out: Path, names: list[str], plan: DemoPlan) -> None:
    """Executors and lag over time, one column per autoscaler, from the live runs' timelines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(names), figsize=(4 * len(names), 6), sharex=True, sharey="row", squeeze=False)
    for col, name in enumerate(names):
        with (out / name.replace(":", "-") / "timeline.csv").open() as f:
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
    parser.add_argument("--duration", type=float, default=DemoPlan().duration_s, help="wall seconds of a load cycle")
    parser.add_argument("--autoscalers", default=",".join(AUTOSCALERS))
    parser.add_argument("--reuse", action="store_true", help="read finished runs from --out instead of running")
    parser.add_argument("--seeds", type=int, default=3, help="simulator runs per autoscaler (median)")
    parser.add_argument("--runs", type=int, default=1, help="live runs per line (median)")
    args = parser.parse_args()
    if not 1 <= args.runs <= 9:
        parser.error(f"--runs {args.runs}: expected 1..9")
    # The demo's rates (its trough needs 1 executor, its peak all), its load cycle played in --duration, not 480 s.
    plan = DemoPlan(duration_s=args.duration, scale=DemoPlan().scale * args.duration / DemoPlan().duration_s)
    try:
        runs = autoscaler_runs([n.strip() for n in args.autoscalers.split(",") if n.strip()], plan.max_scaleout)
    except ValueError as exc:
        parser.error(str(exc))
    names = list(runs)
    controller = demo_config(plan).controller
    targets = (controller.target_latency_s, controller.target_recovery_s)
    seeds = range(1, args.seeds + 1)
    plans = {n: replace(plan, autoscaler=kind, static_executors=count) for n, (kind, count) in runs.items()}
    live_rows = {
        n: median_live([live(plans[n], run_dir(args.out, n, k), args.reuse, targets) for k in range(1, args.runs + 1)])
        for n in names
    }
    sim_rows = {n: median_run([simulated(plans[n], runs[n][0], seed, targets) for seed in seeds]) for n in names}
    optima = {
        name: median_run([optimum(plan, seed, targets, limited=limited) for seed in seeds])
        for name, limited in (("optimum", False), ("optimum within the budget", True))
    }
    print(f"live, local cluster (latency objective {targets[0]:g} s, recovery target {targets[1]:g} s):")
    print("\n".join(table(live_rows) + verdict(live_rows)))
    print(f"simulated, `demo` profile (median of {args.seeds} seeds):")
    print("\n".join(table(sim_rows | optima) + verdict(sim_rows)))
    print("live executor-seconds as a ratio to each yardstick:")
    print("\n".join(yardsticks(live_rows, optima)))
    plot(args.out, names, plan)
    (args.out / "compare.json").write_text(
        json.dumps({"live": live_rows, "simulated": sim_rows, "optimum": optima}, indent=2)
    )
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
