"""Benchmark: `daedalus-spark tune` — does its recommendation beat the config as it is on the held-out part of suite
traces used as history, how fast does the grid run on Spark, and does bad input get one line and exit 2.

A measurement, not a test: it never asserts and exits 0 when goals FAIL. Spark runs: wrap in flock (see the notes).
  python benchmarks/tune_bench.py                      # 8 suite traces, the bench grid, then speed and bad input
  python benchmarks/tune_bench.py --quick              # traces shortened 2x
  python benchmarks/tune_bench.py --trace fast_cycle --skip-speed --json out/tune_bench.json
  python benchmarks/tune_bench.py --trace ysb_advertising_6h_400K_max --quick --master in-process --skip-speed
  python benchmarks/tune_bench.py --skip-goals --day 10     # also: 10 candidates x a day of a week, each task timed
  python benchmarks/tune_bench.py --cycles 3 --master in-process --skip-speed   # each trace 3 times, the last held out
A trace is a bundled 6-h trace by its file's stem (workloads/traces) or a shape of sim/suite.py (seed 1).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sqlite3
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from daedalus_spark.analyze.forecast import fitcache, modelmemo
from daedalus_spark.cli import main as cli_main
from daedalus_spark.config import Config, parse_model
from daedalus_spark.httpserve import free_port
from daedalus_spark.monitor.files import BUNDLED_TRACES_DIR
from daedalus_spark.report.jsonout import strict_json
from daedalus_spark.sim.evaluate import compress_trace
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.suite import get_shape, suite_workload, taylor_series
from daedalus_spark.tune import task
from daedalus_spark.tune.cli import setting_for, tasks_for
from daedalus_spark.tune.grid import TuneGrid, TuneGridError, candidates, load_grid
from daedalus_spark.tune.partition import PARTITIONS_PER_CORE, partitions, split_largest
from daedalus_spark.tune.result import Answer, decide
from daedalus_spark.tune.spark import WorkerCounts, run_tasks
from daedalus_spark.tune.split import HOLDOUT, plan_windows
from daedalus_spark.tune.task import process_counts, simulate_window

# Suite traces (the suite's: the bundled 6-h traces and the shapes of sim/suite.py) where the default controller
# leaves room above the optimum held to its budget (docs/planning.md: traffic 1.29 x, ysb 1.45 x, the shapes
# 1.13-1.42 x), and fast_cycle, where it leaves 3 %: a 10 % saving there would be a sign of a violation-prone choice.
TRACES = (
    "traffic_tm_6h_100K_max",
    "wordcount_sine_40000_6h",
    "ysb_advertising_6h_400K_max",
    "flash_crowds",
    "noisy_plateau",
    "weekly_compressed",
    "step_changes",
    "fast_cycle",
)
SAVING_GOAL = 0.10
TRACES_GOAL = 3
EFFICIENCY_GOAL = 0.80
BIG_GRID_GOAL_S = 15 * 60
BIG_CANDIDATES, BIG_DAYS = 100, 7
BIG_CORES = (2, 4, 8, 16)  # the extrapolation's: local[2] here, and clusters
DEPLOY_GRID = Path(__file__).resolve().parent.parent / "deploy" / "tune.yaml"
IN_PROCESS = "in-process"  # --master in-process: no Spark (e.g. while another Spark run holds the machine's lock)

# Suite traces last 3-7 h: the newest quarter (at most an hour) is held out, the rest simulated in windows of <= 1.5 h,
# each after the default 1-h lead-in (the controller starts fresh: with 15 min, candidates sat at the start's scale-out
# waiting for rescale tokens; docs/tune.md, Measured).
BENCH_GRID = {
    "seed": 1,
    "split": {"holdout_s": 3600, "holdout_max_ratio": 0.25, "window_s": 5400, "lead_in_s": 3600, "min_window_s": 600},
    "knobs": {
        "controller.horizon.upper_weight_ratio": [0.0, 0.25, 0.5],
        "forecast.interval_level": [0.7, 0.9],
        "controller.horizon.target_share_ratio": [0.5, 0.9],
    },
}


# What each Python worker counts (tune/spark.py's WorkerCounts, in this order).
COUNTS = ("fit_hits", "fit_misses", "memo_hits", "memo_misses", "memo_replayed")


def tune(
    workload: np.ndarray,
    grid: TuneGrid,
    config: Config,
    *,
    master: str,
    fit_cache_entries: int = fitcache.DEFAULT_MAX_ENTRIES,
    model_memo_entries: int = modelmemo.DEFAULT_MAX_ENTRIES,
) -> tuple[Answer, dict[str, float]]:
    """The library path of `tune --trace`: candidates, windows, the Spark job, the answer; `timing` also gets the
    fit cache's and the model memo's counts, and the Python workers that ran the tasks."""
    cands = candidates(grid, config)
    plan = plan_windows([(0, len(workload))], grid.split)
    setting = replace(
        setting_for(JobModel(), float(np.max(workload)), config),
        fit_cache_entries=fit_cache_entries,
        model_memo_entries=model_memo_entries,
    )
    tasks = tasks_for(cands, plan, grid.seed)
    timing: dict[str, float] = {}
    counts: WorkerCounts = {}
    if master == IN_PROCESS:  # the same rows as on Spark (tests/spark/test_tune_spark.py), as local[1] runs them
        start = time.perf_counter()
        before = process_counts()
        parts = partitions(tasks, PARTITIONS_PER_CORE)
        rows = sorted(
            (simulate_window(t, workload, setting) for part in parts for t in part),
            key=lambda r: (r.candidate, r.window),
        )
        timing.update(job_s=time.perf_counter() - start, cores=1.0, partitions=float(len(parts)))
        counts[0] = tuple(a - b for a, b in zip(process_counts(), before, strict=True))
    else:
        rows = run_tasks(tasks, workload, setting, master=master, timing=timing, worker_counts=counts)
    for k, name in enumerate(COUNTS):
        timing[name] = float(sum(c[k] for c in counts.values()))
    timing["python_workers"] = float(len(counts))
    for i, pid in enumerate(sorted(counts)):  # each worker's own counts
        for name, value in zip(COUNTS, counts[pid], strict=True):
            timing[f"{name}_worker{i}"] = float(value)
    timing["simulated_h"] = sum(t.window.end_s - t.window.lead_start_s for t in tasks) / 3600.0
    timing["holdout_h"] = sum(w.seconds for w in plan.part(HOLDOUT)) / 3600.0
    return decide(rows, cands, grid, config), timing


def cycles_history(name: str, cycles: int, shorten: int = 1) -> tuple[np.ndarray, int]:
    """A suite trace played `cycles` times in a row, as days of one daily pattern would be, and its length: a shape
    with a new seed each time, a bundled trace with 2 % multiplicative noise per second (a new draw from the second
    time on)."""
    bundled = (BUNDLED_TRACES_DIR / f"{name}.csv").exists()
    plays = []
    for k in range(cycles):
        y = suite_workload(name, seed=1 + k)  # a bundled trace has no seed: the same series each time
        if bundled and k > 0:
            y = y * (1.0 + np.random.default_rng(100 + k).normal(0.0, 0.02, size=len(y)))
        plays.append(compress_trace(np.asarray(y, dtype=float), shorten))
    return np.concatenate(plays), len(plays[-1])


def held_out_cycle(grid: TuneGrid, cycle_s: int) -> TuneGrid:
    """`grid` with its split at the cycle: each cycle one window (after the grid's lead-in), the last one held out."""
    split = grid.split.model_copy(update={"holdout_s": cycle_s, "holdout_max_ratio": 0.5, "window_s": cycle_s})
    return grid.model_copy(update={"split": split})


def goals_on(name: str, answer: Answer, timing: dict[str, float]) -> dict[str, Any]:
    rec, base = answer.holdout[answer.chosen], answer.holdout[0]
    budget = answer.budget_per_hour
    return {
        "trace": name,
        "chosen": answer.chosen,
        "changes": answer.changes,
        "note": answer.note,
        "holdout_h": timing["holdout_h"],
        "current_wh": base.executor_hours,
        "recommended_wh": rec.executor_hours,
        "saving": answer.saving_ratio(),
        "violations": rec.violations,
        "current_violations": base.violations,
        "rescales_per_h": rec.rescales_per_hour,
        "rescales": rec.rescales,
        "allowed_rescales": rec.allowed_rescales(budget),
        "pass_saving": answer.saving_ratio() >= SAVING_GOAL,
        "pass_violations": rec.violations == 0,
        "pass_budget": rec.within_budget(budget),
        "candidates": {
            c.index: {
                "knobs": dict(c.knobs),
                "select": asdict(answer.select[c.index]),
                "holdout": asdict(answer.holdout[c.index]),
            }
            for c in answer.candidates
        },
        "wall_s": timing["job_s"],
        "simulated_h": timing["simulated_h"],
    }


def print_goals(results: list[dict[str, Any]]) -> None:
    print(
        f"== GOALS: recommendation vs your config on the held-out part (saving >= {SAVING_GOAL:.0%}, 0 violations, "
        "rescales within budget)"
    )
    for r in results:
        flags = " ".join(
            f"{'PASS' if r[k] else 'FAIL'} {label}"
            for k, label in (("pass_saving", "saving"), ("pass_violations", "0-viol"), ("pass_budget", "budget"))
        )
        print(
            f"{r['trace']:<28} held out {r['holdout_h']:.2f} h: {r['current_wh']:.2f} -> {r['recommended_wh']:.2f} "
            f"executor-h ({r['saving']:+.1%}), violations {r['current_violations']} -> {r['violations']}, "
            f"{r['rescales']} rescales (budget with its bucket: {r['allowed_rescales']:.1f})  [{flags}]  "
            f"candidate {r['chosen']}: {r['changes'] or r['note']}"
        )
        for index, c in r["candidates"].items():
            sel, held = c["select"], c["holdout"]
            print(
                f"    {index:>3} older {sel['executor_hours']:7.2f} executor-h {sel['violations']:3d} viol "
                f"{sel['rescales']:3d} resc | held out {held['executor_hours']:7.2f} {held['violations']:3d} "
                f"{held['rescales']:3d}  {c['knobs'] or '(the config)'}"
            )
    ok = [r for r in results if r["pass_saving"] and r["pass_violations"] and r["pass_budget"]]
    verdict = "PASS" if len(ok) >= TRACES_GOAL else "FAIL"
    print(f"traces meeting all three: {len(ok)}/{len(results)} {verdict} (goal >= {TRACES_GOAL})")


def speed(master_cores: tuple[int, int] = (1, 2), **entries: int) -> dict[str, float]:
    """The same small grid (4 candidates x 4 windows: 2 h of fast_cycle, 30-min windows, 10-min lead-ins; 16 tasks,
    the candidates alike, so 4 partitions of a window's 4: 2 per core on local[2]) on local[1] and local[2];
    `entries`: the fit cache's and the model memo's sizes."""
    workload = get_shape("fast_cycle").generate(1)[: 2 * 3600]
    grid = parse_model(
        TuneGrid,
        {
            "split": {"holdout_s": 1800, "holdout_max_ratio": 0.25, "window_s": 1800, "lead_in_s": 600},
            "knobs": {"controller.horizon.target_share_ratio": [0.5, 0.75, 0.9]},
        },
        "speed grid",
        TuneGridError,
    )
    out: dict[str, float] = {}
    for cores in master_cores:
        _, timing = tune(workload, grid, Config(), master=f"local[{cores}]", **entries)
        out[f"wall_s_local{cores}"] = timing["job_s"]
        out[f"partitions_local{cores}"] = timing["partitions"]
        for key in [k for k in timing if k.startswith((*COUNTS, "python_workers"))]:
            out[f"{key}_local{cores}"] = timing[key]
        out["simulated_h"] = timing["simulated_h"]
        out[f"simh_per_core_s_local{cores}"] = timing["simulated_h"] / (timing["job_s"] * cores)
    out["parallel_efficiency"] = out["wall_s_local1"] / (2 * out["wall_s_local2"])
    # 100 candidates (+ the config as it is) x 7 days, in 1-day windows with 1-h lead-ins, on local[2] at the
    # measured rate: an upper bound once candidates share work, since a quarter of this grid's candidates lead
    simulated_h = (BIG_CANDIDATES + 1) * BIG_DAYS * (24 + 1)
    out["big_grid_at_grid_rate_s"] = simulated_h / (out["simh_per_core_s_local2"] * 2)
    return out


def print_speed(s: dict[str, float]) -> None:
    print("== SPEED (4 candidates x 4 windows, 2 h of fast_cycle; the machine's 2 cores are shared)")
    for cores in (1, 2):
        print(
            f"local[{cores}]: {s[f'wall_s_local{cores}']:.1f} s, {s[f'simh_per_core_s_local{cores}']:.3f} simulated h "
            f"per core-second, {s[f'partitions_local{cores}']:.0f} partitions"
        )
    for cores in (1, 2):
        workers = int(s[f"python_workers_local{cores}"])
        for name, what in (("fit", "fit cache"), ("memo", "model memo")):
            hits, misses = s[f"{name}_hits_local{cores}"], s[f"{name}_misses_local{cores}"]
            each = ", ".join(
                f"{s[f'{name}_hits_worker{i}_local{cores}']:.0f}/{s[f'{name}_misses_worker{i}_local{cores}']:.0f}"
                for i in range(workers)
            )
            print(
                f"{what} on local[{cores}]: {hits:.0f} hits, {misses:.0f} misses "
                f"({hits / max(1.0, hits + misses):.0%} hit rate) over {workers} Python workers (each: {each})"
            )
    eff = s["parallel_efficiency"]
    print(
        f"parallel efficiency local[1] -> local[2]: {eff:.0%} {'PASS' if eff >= EFFICIENCY_GOAL else 'FAIL'} "
        f"(goal >= {EFFICIENCY_GOAL:.0%})"
    )
    big = s["big_grid_at_grid_rate_s"]
    print(
        f"{BIG_CANDIDATES} candidates x {BIG_DAYS} days on local[2] at this grid's rate (an upper bound: a quarter "
        f"of its candidates lead their window's shared work; --day measures the followers): {big / 60:.0f} min"
    )


def week_history(seed: int = 1) -> np.ndarray:
    """Seven days of pmdarima's Taylor demand at its own pace (a half-hour every 1,800 s), 2 % noise, peak 40,000/s."""
    y = taylor_series(seconds_per_sample=1800.0, samples=BIG_DAYS * 48)
    noise = np.random.default_rng(seed).normal(0.0, 0.02, size=len(y))
    return np.asarray(y / np.max(y) * 40_000.0 * (1.0 + noise), dtype=float)


def day_speed(n: int, *, window: int = 1, efficiency: float = 1.0, **entries: int) -> dict[str, Any]:
    """The first `n` candidates of deploy/tune.yaml on one day-long window (and its 1-h lead-in) of `week_history`,
    partition by partition as Spark runs them (`partitions`: the window's candidates alike one after the other),
    each in fresh caches (a Python worker that has not run this window, so its leader pays every fit), each task
    timed; then 100 candidates (+ the config) x 7 days extrapolated from those times (`big_grid`)."""
    workload = week_history()
    grid = load_grid(DEPLOY_GRID)
    cands = candidates(grid, Config())[:n]
    plan = plan_windows([(0, len(workload))], grid.split)
    setting = replace(setting_for(JobModel(), float(np.max(workload)), Config()), **entries)
    kinds = []
    for part in partitions([t for t in tasks_for(cands, plan, grid.seed) if t.window == plan.windows[window]], 1):
        task._fit_cache = task._model_memo = None  # a fresh Python worker
        times = []
        for t in part:
            start = time.perf_counter()
            simulate_window(t, workload, setting)
            times.append(time.perf_counter() - start)
        config = cands[part[0].candidate].config
        level, loop = config.forecast.interval_level, config.controller.loop_interval_s
        kinds.append(
            {
                "kind": f"interval level {level:g}, loop {loop:g} s",
                "candidates": [t.candidate for t in part],
                "leader_s": times[0],
                "followers_s": times[1:],
            }
        )
    hours = [(w.end_s - w.lead_start_s) / 3600.0 for w in plan.windows]
    return {
        "candidates": n,
        "window_h": hours[window],
        "kinds": kinds,
        "measured_s": sum(k["leader_s"] + sum(k["followers_s"]) for k in kinds),
        "big_grid": big_grid(kinds, n, [h / hours[window] for h in hours], efficiency=efficiency),
        "efficiency": efficiency,
    }


def big_grid(kinds: list[dict[str, Any]], n: int, scales: list[float], *, efficiency: float) -> dict[str, float]:
    """100 candidates (+ the config) x the windows (each `scales` times the measured one's simulated hours) on
    `BIG_CORES` cores, from one window's `kinds` of `n` candidates: each kind's share of the 101 is its share of the
    `n`; a leader costs the kind's leader, any other its followers' mean (no follower measured: as dear as the leader).

    Grouped (now): a partition per window and kind, the largest split to 2 per core (`split_largest`), each part's
    first candidate leads; the wall is the core-seconds over the cores, at least the largest part (an ideal packing).
    Before grouping: a window's tasks spread over every worker, so each worker leads each kind in each window. Local[2]
    at the measured parallel `efficiency`, the others at 100 %."""
    total = BIG_CANDIDATES + 1
    members = [max(1, round(total * len(k["candidates"]) / n)) for k in kinds]
    follower = [float(np.mean(k["followers_s"])) if k["followers_s"] else k["leader_s"] for k in kinds]
    groups = [
        [(scale, k["leader_s"], f)] * m
        for scale in sorted(scales, reverse=True)
        for k, m, f in zip(kinds, members, follower, strict=True)
    ]
    out: dict[str, float] = {}
    for cores in BIG_CORES:
        per_core = cores * (efficiency if cores == 2 else 1.0)
        before = sum(
            scale * (cores * k["leader_s"] + max(0, m - cores) * f)
            for scale in scales
            for k, m, f in zip(kinds, members, follower, strict=True)
        )
        parts = split_largest(groups, PARTITIONS_PER_CORE * cores)
        costs = [p[0][0] * (p[0][1] + (len(p) - 1) * p[0][2]) for p in parts]
        out[f"before_s_{cores}"] = before / per_core
        out[f"grouped_s_{cores}"] = max(sum(costs) / per_core, max(costs))
        out[f"largest_partition_s_{cores}"] = max(costs)
        out[f"partitions_{cores}"] = float(len(parts))
        out[f"core_s_{cores}"] = sum(costs)
    return out


def print_day_speed(d: dict[str, Any]) -> None:
    print(
        f"== SPEED ({d['candidates']} candidates of deploy/tune.yaml x one {d['window_h']:.0f}-h window of a week, "
        f"partition by partition, each in a fresh process's caches): {d['measured_s']:.0f} s"
    )
    for i, k in enumerate(d["kinds"]):
        follow = ", ".join(f"{x:.1f}" for x in k["followers_s"]) or "none"
        who = ", ".join(map(str, k["candidates"]))
        print(f"partition {i} ({k['kind']}; candidates {who}): leader {k['leader_s']:.1f} s, followers {follow} s")
    big = d["big_grid"]
    print(
        f"{BIG_CANDIDATES} candidates x {BIG_DAYS} days, extrapolated (core-seconds over the cores, at least the "
        f"largest partition; local[2] at parallel efficiency {d['efficiency']:.0%}, the others at 100 %):"
    )
    for cores in BIG_CORES:
        grouped = big[f"grouped_s_{cores}"]
        verdict = f" {'PASS' if grouped <= BIG_GRID_GOAL_S else 'FAIL'} (goal <= {BIG_GRID_GOAL_S // 60} min)"
        print(
            f"  {'local[2]' if cores == 2 else f'{cores} cores':<9} grouped: {grouped / 60:.0f} min "
            f"({big[f'partitions_{cores}']:.0f} partitions, the largest {big[f'largest_partition_s_{cores}'] / 60:.1f} "
            f"min, {big[f'core_s_{cores}'] / 60:.0f} core-min){verdict if cores == 2 else ''}; before grouping "
            f"(each worker leads each kind): {big[f'before_s_{cores}'] / 60:.0f} min"
        )


def bad_inputs() -> list[tuple[str, bool, str]]:
    """Each bad input through the CLI in an empty directory: (case, one line + exit 2 + nothing written, the line)."""
    trace = "second|count\n" + "".join(f"{i}|{1000 + i % 7}\n" for i in range(2400))
    grid = "split: {holdout_s: 600, window_s: 600, min_window_s: 300}\n"
    cases: list[tuple[str, dict[str, str], list[str]]] = [
        ("unknown grid key", {"g.yaml": "knobs: {controller.loop_intervals: [30]}\n"}, ["--trace", "t.csv"]),
        ("value out of bounds", {"g.yaml": "knobs: {forecast.interval_level: [1.5]}\n"}, ["--trace", "t.csv"]),
        ("empty history", {"t.csv": "second|count\n"}, ["--trace", "t.csv"]),
        ("gapped history", {"t.csv": "0|5\n1|5\n9|5\n"}, ["--trace", "t.csv"]),
        (
            "unreachable Prometheus",
            {"c.yaml": "monitor: {scrape_interval_s: 1}\n"},
            ["--config", "c.yaml", "--prometheus-url", f"http://127.0.0.1:{free_port()}"],
        ),
        ("foreign knowledge store", {}, ["--trace", "t.csv", "--knowledge", "k.sqlite"]),
    ]
    results = []
    for name, files, argv in cases:
        with tempfile.TemporaryDirectory() as d, contextlib.chdir(d):
            for file, text in {"g.yaml": grid, "t.csv": trace, **files}.items():
                Path(file).write_text(text)
            if "--knowledge" in argv:
                with sqlite3.connect("k.sqlite") as conn:
                    conn.execute("CREATE TABLE invoices (id INTEGER)")
            before = sorted(Path().iterdir())
            job = [] if "--knowledge" in argv else ["--job-model", "local"]
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = cli_main(["tune", "--grid", "g.yaml", *job, *argv, "--out", "out"])
            line = err.getvalue().strip()
            ok = code == 2 and len(line.splitlines()) == 1 and sorted(Path().iterdir()) == before
            results.append((name, ok, line))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--trace",
        action="append",
        metavar="NAME",
        help=f"suite trace: a shape or a bundled trace (repeatable; default {TRACES})",
    )
    p.add_argument("--quick", action="store_true", help="shorten every trace 2x")
    p.add_argument(
        "--cycles",
        type=int,
        metavar="N",
        help="play each trace N times as the history, choose on the first N-1, hold out the last (whole) one",
    )
    p.add_argument("--master", default="local[2]", help=f"Spark master for the goals, or {IN_PROCESS}")
    p.add_argument("--grid", metavar="FILE", help="a tune grid YAML instead of the bench grid (BENCH_GRID)")
    p.add_argument("--skip-goals", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument(
        "--fit-cache-entries",
        type=int,
        default=fitcache.DEFAULT_MAX_ENTRIES,
        help="fitted models each process keeps for the next candidates (0: off; default %(default)s)",
    )
    p.add_argument(
        "--model-memo-entries",
        type=int,
        default=modelmemo.DEFAULT_MAX_ENTRIES,
        help="ARIMA updates and forecasts each process keeps for the next candidates (0: off; default %(default)s)",
    )
    p.add_argument("--day", type=int, metavar="N", help="also time N candidates x one day-long window of a week")
    args = p.parse_args(argv)
    entries = {"fit_cache_entries": args.fit_cache_entries, "model_memo_entries": args.model_memo_entries}
    warnings.simplefilter("ignore")
    grid = load_grid(args.grid) if args.grid else parse_model(TuneGrid, BENCH_GRID, "bench grid", TuneGridError)
    figures: dict[str, Any] = {"grid": grid.model_dump(mode="json")}
    if not args.skip_goals:
        results = []
        for name in args.trace or TRACES:
            shorten = 2 if args.quick else 1
            if args.cycles:
                workload, cycle_s = cycles_history(name, args.cycles, shorten)
                trace_grid = held_out_cycle(grid, cycle_s)
            else:
                workload, trace_grid = compress_trace(suite_workload(name), shorten), grid
            start = time.perf_counter()
            answer, timing = tune(workload, trace_grid, Config(), master=args.master, **entries)
            results.append(goals_on(name, answer, timing) | {"cycles": args.cycles or 1})
            print(
                f"{name}: {len(workload) / 3600:.2f} h, {len(answer.candidates)} candidates, "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )
        print_goals(results)
        figures["traces"] = results
    if not args.skip_speed:
        figures["speed"] = speed(**entries)
        print_speed(figures["speed"])
    if args.day:
        efficiency = figures["speed"]["parallel_efficiency"] if "speed" in figures else 1.0
        figures["day"] = day_speed(args.day, efficiency=efficiency, **entries)
        print_day_speed(figures["day"])
    checks = bad_inputs()
    print("== BAD INPUT (one line, exit 2, nothing written)")
    for name, ok, line in checks:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {line}")
    figures["bad_input"] = [{"case": n, "pass": ok, "line": line} for n, ok, line in checks]
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(strict_json(figures) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
