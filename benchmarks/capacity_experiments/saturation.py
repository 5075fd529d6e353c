"""spark_capacity.py `--experiment saturation`: even and skewed (Zipf) batches at 1..4 executors on the demo's cluster,
measured beside the busiest-share predictions for the skewed layout."""

from __future__ import annotations

import argparse
import math
import shutil
from collections.abc import Sequence
from typing import Any

import sparkbench as sb  # the benchmarks' shared helpers, in benchmarks/

from capacity_experiments.measurement import busiest_observed, compact, drain, list_schedule_share, task_fit
from daedalus_spark.analyze.partitions import busiest_share
from daedalus_spark.workloads.locallog import LocalLog


def run_saturation(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = sb.header("saturation")
    weights_zipf = sb.zipf_weights(args.partitions, args.zipf_exponent)
    if args.zipf_order == "ascending":
        weights_zipf = weights_zipf[::-1]
    even = [1.0 / args.partitions] * args.partitions
    layouts = {
        "small": [args.small_per_partition] * args.partitions,
        "even": [round(args.batch_records * w) for w in even],
        "zipf": [round(args.batch_records * w) for w in weights_zipf],
    }
    result |= {
        "partitions": args.partitions,
        "zipf_exponent": args.zipf_exponent,
        "zipf_order": args.zipf_order,
        "zipf_weights": [round(w, 4) for w in weights_zipf],
        "batch_records": args.batch_records,
        "records_per_partition": layouts,
        "warmup_batches": args.warmup,
        "measured_batches": args.batches,
        "trigger_s": 0.0,
        "runs": [],
    }
    sb.say(f"zipf weights (exponent {args.zipf_exponent}, {args.zipf_order}): {[round(w, 3) for w in weights_zipf]}")
    sb.say(f"records per partition and batch: {layouts}")
    pool = sb.line_pool()
    counts = [int(c) for c in args.executor_counts.split(",")]
    with sb.demo_job("bench-saturation", initial_executors=counts[0]) as job:
        log = LocalLog(job.root / "log")
        for n in counts:
            took = job.scale_to(n)
            sb.say(f"executors={n}: live after {took:.1f} s: {job.live()}")
            runs: dict[str, dict[str, Any]] = {}
            for layout in ("small", "even", "zipf"):
                runs[layout] = saturated_run(job, log, args, n=n, layout=layout, caps=layouts[layout], pool=pool)
            result["runs"].extend(compact(r) for r in runs.values())
            result.setdefault("predictions", []).append(predict(n, runs, weights_zipf, even, args.batch_records))
    result["loadavg_end"] = sb.loadavg()
    print_saturation_table(result)
    return result


def saturated_run(
    job: sb.DemoJob,
    log: LocalLog,
    args: argparse.Namespace,
    *,
    n: int,
    layout: str,
    caps: Sequence[int],
    pool: Sequence[str],
) -> dict[str, Any]:
    """One layout at n executors: its batches preloaded, drained back to back and measured; the busiest executor's
    observed share of the records and of the task time."""
    topic = f"sat-{layout}-{n}"
    rounds = args.warmup + args.batches
    rows_total = sb.preload(log, topic, caps, rounds, pool)
    run = drain(
        job,
        log.root,
        topic,
        caps,
        rows_total,
        trigger_s=0.0,
        warmup=args.warmup,
        timeout_s=args.query_timeout_s,
        name=f"sat_{layout}_{n}",
    )
    shutil.rmtree(log.root / topic, ignore_errors=True)
    share_rec, share_time = busiest_observed(run["tasks"])
    run |= {
        "executors": n,
        "layout": layout,
        "busiest_share_records_observed": share_rec,
        "busiest_share_task_time_observed": share_time,
        "task_fit": task_fit(run["tasks"]),
    }
    sb.say(
        f"executors={n} {layout:5s}: {run['records_per_s']:9.0f} records/s "
        f"(batch {run['batch_s_mean']:.2f} s, {sum(caps)} rows/batch, {run['measured']} batches; "
        f"wall {run['wall_records_per_s']:.0f}/s), cpu {run['cpu_us_per_record']:.1f} us/record, "
        f"busiest executor's records {share_rec:.3f}, task time {share_time:.3f}"
    )
    return run


def predict(
    n: int, runs: dict[str, dict[str, Any]], zipf: Sequence[float], even: Sequence[float], batch: int
) -> dict[str, Any]:
    """Predictions for the skewed layout at n executors beside the measurement.

    Batch duration = F + k x share: F = the `small` batches' duration (the fixed cost; their records are
    negligible), k x share_even = the even batch's duration - F. The skewed batch then takes F + k x share_rule,
    with share_rule the busiest executor's share under longest-task-first over cores (any_core) or 1/n (even).
    """
    keys = {("t", p): w for p, w in enumerate(zipf)}
    share = {
        "any_core": busiest_share(keys, n, "any_core"),
        "even_share": 1.0 / n,
        "list_index_order": list_schedule_share(zipf, n),
    }
    share_even_layout = busiest_share({("t", p): w for p, w in enumerate(even)}, n, "any_core")
    fixed = runs["small"]["batch_s_mean"]
    d_even = runs["even"]["batch_s_mean"]
    k = (d_even - fixed) / share_even_layout
    zipf_rows = runs["zipf"]["rows"] / max(1, runs["zipf"]["measured"])
    out: dict[str, Any] = {
        "executors": n,
        "fixed_s": fixed,
        "even_batch_s": d_even,
        "zipf_batch_s": runs["zipf"]["batch_s_mean"],
        "even_records_per_s": runs["even"]["records_per_s"],
        "zipf_records_per_s": runs["zipf"]["records_per_s"],
        "busiest_share_observed": runs["zipf"]["busiest_share_records_observed"],
        "busiest_share_even_layout": share_even_layout,
        "rules": {},
    }
    for rule, s in share.items():
        d = fixed + k * s
        out["rules"][rule] = {
            "busiest_share": s,
            "batch_s": d,
            "records_per_s": zipf_rows / d if d > 0 else math.nan,
            "records_per_s_no_fixed_cost": runs["even"]["records_per_s"] * share_even_layout / s,
        }
    return out


def print_saturation_table(result: dict[str, Any]) -> None:
    print("\nSaturated throughput, records/s (batch time in s); zipf predictions with the fixed cost amortized")
    print(
        f"{'n':>2} {'small':>14} {'even':>15} {'zipf measured':>15} {'pred any_core':>14} {'pred even 1/n':>14} "
        f"{'share obs':>9} {'any_core':>8} {'1/n':>6}"
    )
    small = {r["executors"]: r for r in result["runs"] if r["layout"] == "small"}
    for p in result["predictions"]:
        n = p["executors"]
        r_any, r_even = p["rules"]["any_core"], p["rules"]["even_share"]
        print(
            f"{n:>2} {small[n]['records_per_s']:8.0f} ({p['fixed_s']:.1f}) {p['even_records_per_s']:8.0f} "
            f"({p['even_batch_s']:.1f}) {p['zipf_records_per_s']:8.0f} ({p['zipf_batch_s']:.1f}) "
            f"{r_any['records_per_s']:14.0f} {r_even['records_per_s']:14.0f} {p['busiest_share_observed']:9.3f} "
            f"{r_any['busiest_share']:8.3f} {r_even['busiest_share']:6.3f}"
        )
    print(f"load average at the end: {result['loadavg_end']}")
