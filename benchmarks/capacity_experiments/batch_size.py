"""spark_capacity.py `--experiment batch-size`: capped backlogs, a stepped ramp of the generator's rate (steady
states) and a backlog worked off, per executor count; batch and task durations fitted against their records."""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import sparkbench as sb  # the benchmarks' shared helpers, in benchmarks/

from capacity_experiments.capped_source import capped_values
from capacity_experiments.measurement import (
    batch_fit,
    compact,
    cpu_between,
    cpu_sampler,
    drain,
    per_second_rates,
    task_fit,
)
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.source import write_stream


def run_batch_size(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = sb.header("batch_size")
    result |= {
        "partitions": args.partitions,
        "trigger_s": args.trigger_s,
        "caps_per_partition": [int(c) for c in args.caps.split(",")],
        "ramp_rates": [float(r) for r in args.rates.split(",")],
        "step_s": args.step_s,
        "backlog_records": args.backlog,
        "per_executors": [],
    }
    pool = sb.line_pool()
    counts = [int(c) for c in args.executor_counts.split(",")]
    with sb.demo_job("bench-batch-size", initial_executors=counts[0]) as job:
        job.scale_to(counts[0])
        result["idle"] = idle_floor(job, args.idle_s)
        for n in counts:
            took = job.scale_to(n)
            sb.say(f"executors={n}: live after {took:.1f} s: {job.live()}")
            result["per_executors"].append(
                batch_size_at(job, n, args, caps_per_partition=result["caps_per_partition"], pool=pool)
            )
    result["loadavg_end"] = sb.loadavg()
    return result


def batch_size_at(
    job: sb.DemoJob, n: int, args: argparse.Namespace, *, caps_per_partition: Sequence[int], pool: Sequence[str]
) -> dict[str, Any]:
    """At n executors: the ramp and the backlog, then each capped backlog; batch and task durations fitted."""
    entry: dict[str, Any] = {"executors": n, "capped": [], "ramp": [], "backlog": {}}
    points: list[tuple[float, float]] = []
    tasks: list[list[dict[str, Any]]] = []
    # The stream first: it warms new executors (JIT, Python workers) before the capped batches.
    stream = ramp_and_backlog(job, n, args, pool)
    entry["ramp"], entry["backlog"] = stream["steps"], stream["backlog"]
    points += stream["points"]
    for cap in caps_per_partition:
        run = capped_run(job, cap, args, n=n, pool=pool)
        points += [(b["rows"], b["duration_s"]) for b in run["batches"][args.warmup :]]
        tasks += run["tasks"]
        entry["capped"].append(compact(run))
    entry["batch_fit"] = batch_fit(points)
    entry["batch_fit_capped_only"] = batch_fit(
        [(b["rows"], b["duration_s"]) for c in entry["capped"] for b in c["batches"][args.warmup :]]
    )
    entry["task_fit"] = task_fit(tasks)
    entry["steady_max"] = steady_max(entry["ramp"])
    entry["points"] = [(int(r), round(d, 3)) for r, d in points]
    say_fits(n, entry, args.trigger_s)
    return entry


def capped_run(job: sb.DemoJob, cap: int, args: argparse.Namespace, *, n: int, pool: Sequence[str]) -> dict[str, Any]:
    """A backlog drained at the trigger in batches of `cap` records per partition, measured."""
    log_dir = job.root / "log"
    caps = [cap] * args.partitions
    topic = f"cap-{cap}-{n}"
    rows_total = sb.preload(LocalLog(log_dir), topic, caps, args.warmup + args.batches, pool)
    run = drain(
        job,
        log_dir,
        topic,
        caps,
        rows_total,
        trigger_s=args.trigger_s,
        warmup=args.warmup,
        timeout_s=args.query_timeout_s,
        name=f"cap_{cap}_{n}",
    )
    shutil.rmtree(log_dir / topic, ignore_errors=True)
    run |= {"cap_per_partition": cap, "task_fit": task_fit(run["tasks"])}
    sb.say(
        f"executors={n} capped {cap:6d}/partition: {cap * args.partitions:7d} rows/batch, batch "
        f"{run['batch_s_mean']:.2f} s, {run['records_per_s']:8.0f} records/s, "
        f"cpu {run['cpu_us_per_record']:7.1f} us/record ({sum(run['cpu_s'].values()):.1f} cpu-s)"
    )
    return run


def say_fits(n: int, entry: dict[str, Any], trigger_s: float) -> None:
    """The batch and task fits at n executors and the steady-state maximum, as lines of the log."""
    fit, tf = entry["batch_fit"], entry["task_fit"]
    if fit:
        sb.say(
            f"executors={n} fit over {fit['points']} batches ({fit['rows_min']:.0f}-{fit['rows_max']:.0f} "
            f"rows): batch = {fit['fixed_s']:.2f} s + rows x {fit['s_per_record'] * 1e6:.2f} us "
            f"(marginal {fit['records_per_s_marginal']:.0f} records/s, R^2 {fit['r2']:.2f})"
        )
    if tf:
        sb.say(
            f"executors={n} source tasks ({tf['tasks']}): {tf['task_overhead_s']:.3f} s + records x "
            f"{tf['s_per_record_per_core'] * 1e6:.2f} us per core"
        )
    sb.say(f"executors={n} steady-state maximum at the {trigger_s:g}-s trigger: {entry['steady_max']}")


def idle_floor(job: sb.DemoJob, seconds: float) -> dict[str, Any]:
    """CPU of registered executors with no query running: cores per executor and the ratio of the quota."""
    with cpu_sampler(job) as sampler:
        time.sleep(seconds)
    rates = per_second_rates(sampler.rows)
    per = {e: statistics.mean(r) for e, r in rates.items() if r}
    quota = job.cluster.cpus_per_executor
    out = {
        "seconds": seconds,
        "cores_per_executor": per,
        "ratio_of_quota_mean": statistics.mean(per.values()) / quota if per else math.nan,
        "ratio_of_quota_sd_per_s": statistics.mean(statistics.pstdev(r) for r in rates.values() if r) / quota
        if rates
        else math.nan,
    }
    sb.say(
        f"idle executors ({len(per)}), no query: CPU {out['ratio_of_quota_mean']:.3f} of the quota "
        f"(per-second sd {out['ratio_of_quota_sd_per_s']:.3f})"
    )
    return out


def ramp_and_backlog(job: sb.DemoJob, n: int, args: argparse.Namespace, pool: Sequence[str]) -> dict[str, Any]:
    """One uncapped query at the trigger: generator steps at the ramp's rates (stop at the first unbounded step),
    then a backlog appended at once and worked off while the generator feeds the first rate."""
    log_dir, topic = job.root / "log", f"stream-{n}"
    log = LocalLog(log_dir)
    log.create_topic(topic, args.partitions)
    t0_wall = time.time()
    quota = job.cluster.cpus_per_executor

    def sample() -> dict[str, Any]:
        latest, committed, lag = sb.lag_records(log, topic)
        return {"cpu": job.executor_cpu(), "latest": latest, "committed": committed, "lag": lag}

    steps: list[dict[str, Any]] = []
    points: list[tuple[float, float]] = []
    rates = [float(r) for r in args.rates.split(",")]
    with sb.Sampler(sample, 1.0, t0=time.monotonic() - (time.time() - t0_wall)) as sampler:
        query = write_stream(
            wordcount.build(job.spark, capped_values(job.spark, log_dir, topic, None)),
            sink="noop",
            name=f"stream_{n}",
            output_mode="update",
            checkpoint=str(job.root / f"ckpt-{topic}"),
            trigger_s=args.trigger_s,
        ).start()
        try:
            # Warm: the first batches of a new query are slow (20-45 s for the first at 1 executor); feed the first
            # rate until 4 batches are done, then --warm-s more.
            with sb.generator(log_dir, topic, args.partitions, [rates[0]] * 600, job.root):
                sb.wait_until_batches(query, 4, timeout_s=300)
                time.sleep(args.warm_s)
            for rate in rates:
                start = sampler.now()
                pool_feeder = rate > args.generator_max
                with sb.generator(
                    log_dir, topic, args.partitions, [rate] * int(args.step_s), job.root, pool_feeder=pool_feeder
                ) as g:
                    g.wait(timeout=args.step_s + 60)
                end = sampler.now()
                step = step_stats(sampler, query, t0_wall, start, end, rate, quota)
                step["feeder"] = "pool" if pool_feeder else "generator"
                step["feeder_exit"] = g.returncode  # 3: it fell behind its target rate
                steps.append(step)
                points += step.pop("points")
                sb.say(
                    f"executors={n} ramp {rate:8.0f}/s ({step['feeder']}, exit {step['feeder_exit']}): arrived "
                    f"{step['arrival_per_s']:8.0f}/s, processed "
                    f"{step['processed_per_s']:8.0f}/s, lag {step['lag_mean']:8.0f} ({step['lag_s_of_input']:.1f} s "
                    f"of input, slope {step['lag_slope_per_s']:+.0f}/s), batch {step['batch_rows_mean']:.0f} rows in "
                    f"{step['batch_s_mean']:.2f} s, cpu {step['cpu_ratio_mean']:.2f} of quota "
                    f"(sd {step['cpu_ratio_sd_per_s']:.2f}), {step['cpu_us_per_record']:.1f} us/record, "
                    f"{'bounded' if step['bounded'] else 'UNBOUNDED'}"
                )
                if not step["bounded"]:
                    break
            backlog = work_off(job, sampler, query, t0_wall, log, topic, args, rates[0], pool, not steps[-1]["bounded"])
            points += backlog.pop("points")
        finally:
            query.stop()
    return {"steps": steps, "backlog": backlog, "points": points}


def step_stats(
    sampler: sb.Sampler, query: Any, t0_wall: float, start: float, end: float, rate: float, quota: float
) -> dict[str, Any]:
    """A ramp step judged on its last two thirds: arrival and processed rates, lag level and slope, batches, CPU."""
    mid = start + (end - start) / 3  # judged on the last two thirds
    rows = sampler.between(mid, end)
    if len(rows) < 3:
        raise RuntimeError(f"ramp step {rate:.0f}/s: only {len(rows)} samples in its last two thirds")
    t = np.array([r["t"] for r in rows])
    lag = np.array([r["lag"] for r in rows], dtype=float)
    span = rows[-1]["t"] - rows[0]["t"]
    arrived = (rows[-1]["latest"] - rows[0]["latest"]) / span
    processed = (rows[-1]["committed"] - rows[0]["committed"]) / span
    slope = float(np.polyfit(t, lag, 1)[0]) if len(rows) >= 3 else math.nan
    batches = [b for b in sb.progress_rows(query, t0_wall) if b["rows"] > 0]
    in_step = [b for b in batches if b["start"] >= start + 5 and b["end"] <= end]
    in_half = [b for b in batches if b["start"] >= mid and b["end"] <= end] or in_step
    cpu = cpu_between(sampler.rows, rows[0]["t"], rows[-1]["t"])
    per_s = per_second_rates(rows)
    ratios = [x / quota for r in per_s.values() for x in r]
    sds = [statistics.pstdev(r) / quota for r in per_s.values() if len(r) > 2]
    done = rows[-1]["committed"] - rows[0]["committed"]
    # Bounded: the lag does not keep growing (least-squares slope under 10 % of the arrival rate). The processed rate
    # (committed offsets) moves in whole batches of several seconds, too coarse for a short window.
    bounded = bool(slope < 0.10 * max(arrived, 1.0))
    return {
        "target_per_s": rate,
        "arrival_per_s": arrived,
        "processed_per_s": processed,
        "lag_mean": float(lag.mean()),
        "lag_s_of_input": float(lag.mean()) / max(arrived, 1.0),
        "lag_slope_per_s": slope,
        "batches": len(in_half),
        "batch_rows_mean": statistics.mean(b["rows"] for b in in_half) if in_half else math.nan,
        "batch_s_mean": statistics.mean(b["duration_s"] for b in in_half) if in_half else math.nan,
        "cpu_s": cpu,
        "cpu_ratio_mean": statistics.mean(ratios) if ratios else math.nan,
        "cpu_ratio_sd_per_s": statistics.mean(sds) if sds else math.nan,
        "cpu_us_per_record": 1e6 * sum(cpu.values()) / done if done > 0 else math.nan,
        "bounded": bounded,
        "points": [(b["rows"], b["duration_s"]) for b in in_step],
    }


def work_off(
    job: sb.DemoJob,
    sampler: sb.Sampler,
    query: Any,
    t0_wall: float,
    log: LocalLog,
    topic: str,
    args: argparse.Namespace,
    rate: float,
    pool: Sequence[str],
    drain_first: bool,
) -> dict[str, Any]:
    """Append a backlog at once and work it off uncapped while the generator feeds `rate`: the batches shrink
    from the backlog back to the steady size. After an unbounded ramp step (`drain_first`) the lag it left is
    worked off at `rate` first (not measured)."""
    if drain_first:
        with sb.generator(log.root, topic, args.partitions, [rate] * int(args.drain_s), job.root) as g:
            g.wait(timeout=args.drain_s + 60)
    start = sampler.now()
    per = args.backlog // args.partitions
    for p in range(args.partitions):
        sb.append_lines(log, topic, p, per, pool, start=p * 3571)
    lag0 = sb.lag_records(log, topic)[2]
    with sb.generator(log.root, topic, args.partitions, [rate] * int(args.backlog_s), job.root) as g:
        g.wait(timeout=args.backlog_s + 60)
    end = sampler.now()
    batches = [b for b in sb.progress_rows(query, t0_wall) if b["rows"] > 0 and b["start"] >= start - 0.5]
    rows = sum(b["rows"] for b in batches)
    busy = sum(b["duration_s"] for b in batches)
    cpu = cpu_between(sampler.rows, start, end)
    lag_end = sb.lag_records(log, topic)[2]
    out = {
        "backlog_at_start": lag0,
        "feed_per_s": rate,
        "batches": [{"rows": b["rows"], "duration_s": round(b["duration_s"], 3)} for b in batches],
        "records_per_s": rows / busy if busy else math.nan,
        "cpu_us_per_record": 1e6 * sum(cpu.values()) / rows if rows else math.nan,
        "lag_end": lag_end,
        "points": [(b["rows"], b["duration_s"]) for b in batches],
    }
    sb.say(
        f"backlog {lag0} records worked off while feeding {rate:.0f}/s: batches (rows, s) "
        f"{[(b['rows'], round(b['duration_s'], 1)) for b in batches]}; {out['records_per_s']:.0f} records/s over "
        f"the batches, cpu {out['cpu_us_per_record']:.1f} us/record; lag at the end {lag_end}"
    )
    return out


def steady_max(steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    bounded = [s for s in steps if s["bounded"]]
    unbounded = [s for s in steps if not s["bounded"]]
    return {
        "highest_bounded_per_s": max((s["arrival_per_s"] for s in bounded), default=math.nan),
        "first_unbounded_per_s": unbounded[0]["arrival_per_s"] if unbounded else None,
        "note": "lower bound: every step stayed bounded (the generator's or the ramp's limit)" if not unbounded else "",
    }
