"""What spark_capacity.py's experiments share: executor CPU over time, a capped backlog drained and measured, the
busiest executor's share, and least-squares fits of task and batch durations."""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sparkbench as sb  # the benchmarks' shared helpers, in benchmarks/

from capacity_experiments.capped_source import capped_values
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.source import write_stream


def cpu_sampler(job: sb.DemoJob, t0_wall: float | None = None, interval_s: float = 1.0) -> sb.Sampler:
    """Executor CPU seconds every `interval_s`; times relative to the wall-clock `t0_wall` (now by default)."""
    t0 = time.monotonic() - (time.time() - t0_wall) if t0_wall is not None else time.monotonic()
    return sb.Sampler(lambda: {"cpu": job.executor_cpu()}, interval_s, t0=t0)


def cpu_at(rows: Sequence[dict[str, Any]], t: float) -> dict[str, float]:
    """Executor CPU seconds at time t, linearly interpolated between the sampler's rows (clamped at the ends)."""
    if not rows:
        return {}
    before = [r for r in rows if r["t"] <= t] or [rows[0]]
    after = [r for r in rows if r["t"] >= t] or [rows[-1]]
    a, b = before[-1], after[0]
    if b["t"] <= a["t"]:
        return dict(a["cpu"])
    f = (t - a["t"]) / (b["t"] - a["t"])
    return {e: a["cpu"][e] + f * (b["cpu"].get(e, a["cpu"][e]) - a["cpu"][e]) for e in a["cpu"]}


def cpu_between(rows: Sequence[dict[str, Any]], start: float, end: float) -> dict[str, float]:
    c0, c1 = cpu_at(rows, start), cpu_at(rows, end)
    return {e: c1[e] - c0[e] for e in c0 if e in c1}


def per_second_rates(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """CPU cores per executor between consecutive sampler rows."""
    out: dict[str, list[float]] = {}
    for a, b in itertools.pairwise(rows):
        dt = b["t"] - a["t"]
        for e, v in b["cpu"].items():
            if e in a["cpu"] and dt > 0:
                out.setdefault(e, []).append((v - a["cpu"][e]) / dt)
    return out


def drain(
    job: sb.DemoJob,
    log_dir: Path,
    topic: str,
    caps: Sequence[int],
    rows_total: int,
    *,
    trigger_s: float,
    warmup: int,
    timeout_s: float,
    name: str,
) -> dict[str, Any]:
    """WordCount over a preloaded topic in capped batches until `rows_total` rows are read. Returns the measured
    batches (after `warmup`), their throughput, executor CPU per record, and the source stages' tasks."""
    after = job.max_stage_id()
    t0_wall = time.time()
    with cpu_sampler(job, t0_wall) as sampler:
        query = write_stream(
            wordcount.build(job.spark, capped_values(job.spark, log_dir, topic, caps)),
            sink="noop",
            name=name,
            output_mode="update",
            checkpoint=str(job.root / f"ckpt-{topic}"),
            trigger_s=trigger_s,
        ).start()
        try:
            deadline = time.monotonic() + timeout_s
            while sum(p["numInputRows"] for p in query.recentProgress) < rows_total:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name}: {rows_total} rows not read within {timeout_s:.0f} s")
                if query.exception() is not None:
                    raise RuntimeError(f"{name}: query failed: {query.exception()}")
                time.sleep(0.2)
        finally:
            query.stop()
        batches = [b for b in sb.progress_rows(query, t0_wall) if b["rows"] > 0]
        time.sleep(1.2)  # one more CPU sample after the last batch
    measured = batches[warmup:]
    rows = sum(b["rows"] for b in measured)
    busy = sum(b["duration_s"] for b in measured)
    window = (measured[0]["start"], measured[-1]["end"]) if measured else (0.0, 0.0)
    cpu = cpu_between(sampler.rows, *window)
    tasks = sb.source_stage_tasks(job, after)
    return {
        "batches": batches,
        "measured": len(measured),
        "rows": rows,
        "records_per_s": rows / busy if busy else math.nan,
        "wall_records_per_s": rows / (window[1] - window[0]) if window[1] > window[0] else math.nan,
        "batch_s_mean": busy / len(measured) if measured else math.nan,
        "cpu_s": cpu,
        "cpu_us_per_record": 1e6 * sum(cpu.values()) / rows if rows else math.nan,
        "tasks": tasks[warmup:],
        "state_task_s_median": statistics.median(sb.state_stage_task_durations(job, after) or [math.nan]),
    }


def busiest_observed(tasks: Sequence[Sequence[dict[str, Any]]]) -> tuple[float, float]:
    """Mean over stages of the busiest executor's share of the records, and of the source-task time."""
    shares, time_shares = [], []
    for stage in tasks:
        recs: dict[str, float] = {}
        secs: dict[str, float] = {}
        for t in stage:
            recs[t["executor"]] = recs.get(t["executor"], 0) + t["records"]
            secs[t["executor"]] = secs.get(t["executor"], 0) + t["duration_s"]
        if sum(recs.values()) > 0:
            shares.append(max(recs.values()) / sum(recs.values()))
        if sum(secs.values()) > 0:
            time_shares.append(max(secs.values()) / sum(secs.values()))
    return (statistics.mean(shares) if shares else math.nan, statistics.mean(time_shares) if time_shares else math.nan)


def list_schedule_share(weights: Sequence[float], n: int) -> float:
    """Busiest core's share when tasks are taken in partition-index order by whichever core frees first (what
    Spark's TaskSetManager does without locality preferences), tasks as long as their weight."""
    free = [0.0] * n
    for w in weights:
        i = free.index(min(free))
        free[i] += w
    return max(free) / sum(weights)


def task_fit(tasks: Sequence[Sequence[dict[str, Any]]]) -> dict[str, float]:
    """Least squares of source task duration = overhead + records x seconds_per_record (per core)."""
    pts = [(t["records"], t["duration_s"]) for stage in tasks for t in stage]
    if len(pts) < 3 or len({p[0] for p in pts}) < 2:
        return {}
    x = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    (a, b), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(x), x]), y, rcond=None)
    return {"task_overhead_s": float(a), "s_per_record_per_core": float(b), "tasks": len(pts)}


def batch_fit(points: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Least squares of batch duration = fixed + rows x seconds_per_record; R^2."""
    if len(points) < 3 or len({p[0] for p in points}) < 2:
        return {}
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    (a, b), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(x), x]), y, rcond=None)
    pred = a + b * x
    ss = float(((y - y.mean()) ** 2).sum())
    return {
        "fixed_s": float(a),
        "s_per_record": float(b),
        "records_per_s_marginal": float(1 / b) if b > 0 else math.inf,
        "r2": 1 - float(((y - pred) ** 2).sum()) / ss if ss else math.nan,
        "points": len(points),
        "rows_min": float(x.min()),
        "rows_max": float(x.max()),
    }


def compact(run: dict[str, Any]) -> dict[str, Any]:
    """A run without its per-task lists (kept short in the JSON): per-batch rows and durations stay."""
    out = {k: v for k, v in run.items() if k != "tasks"}
    out["batches"] = [
        {"rows": b["rows"], "duration_s": round(b["duration_s"], 3), "start": round(b["start"], 2)}
        for b in run["batches"]
    ]
    return out
