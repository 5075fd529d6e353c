"""Benchmark (Spark): records/s per pipeline at 1..N executors (one per local standalone worker), the agent's
overhead, and WordCount in the demo's setting: saturated throughput with even and skewed partitions, and
how throughput and CPU per record depend on the batch size.

Experiments (--experiment):
- `pipelines` (default, the original): each pipeline drains a preloaded backlog in capped micro-batches at
  1..N executors (one application each, `spark.cores.max`); throughput = rows / batch time after the first batch.
- `saturation`: the demo's cluster (4 workers x 0.25 CPU, 8 partitions, agent on), one application scaled in place
  to 1, 2, 3, 4 executors. At each: a preloaded backlog drained back-to-back in batches of a fixed composition
  (a reader that caps each partition at its own count, so skew survives the cap): `small` (8 x 1,000 lines: the
  per-batch fixed cost), `even` (B lines in 8 equal partitions) and `zipf` (B lines with Zipf weights; --zipf-order
  puts the largest partition first or last). Prints the measured throughput beside predictions for the skewed
  layout: tasks placed longest-first over cores (analyze/partitions.py, any_core, busiest_share), in partition-index
  order to the next free core (Spark's TaskSetManager without locality preferences) and an even share 1/n; and the
  busiest executor's share of the records observed in the tasks (driver REST API).
- `batch-size`: per executor count, (c) capped backlogs at --caps (records per partition and batch, the source's
  maxRecordsPerTrigger), (a) a stepped ramp of the generator's rate at the 1-s trigger, uncapped (steady states;
  the highest step whose lag stays bounded is the steady-state maximum), (b) a backlog appended at once and worked
  off uncapped while the generator keeps feeding. For every batch: rows, triggerExecution; per phase: records/s
  and executor CPU seconds per record (worker cgroups via the CPU exporter). Fits batch duration = fixed +
  rows x seconds-per-record (least squares) per executor count, and task duration = overhead + records x s.

Noisy: 2 cores shared by the driver, the executors, the generator and other work; every figure is printed with the
load average. Results (saturation, batch-size) are merged into benchmarks/results/spark_local.json.

  python benchmarks/spark_capacity.py [--quick]                                  # pipelines
  nice -n -10 python benchmarks/spark_capacity.py --experiment saturation
  nice -n -10 python benchmarks/spark_capacity.py --experiment batch-size --executor-counts 2   # ~7 min per count
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sparkbench as sb  # the benchmarks' shared helpers, next to this file
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.types import StructType

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.analyze.partitions import busiest_share
from daedalus_spark.sparkcluster import LocalCluster, cpu_quota_support
from daedalus_spark.workloads import traffic, wordcount, ysb
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.records import MAKERS
from daedalus_spark.workloads.source import LocalLogDataSource, LocalLogStreamReader, read_values, write_stream

PIPELINES = {"wordcount": wordcount.PIPELINE, "ysb": ysb.PIPELINE, "traffic": traffic.PIPELINE}
PARTITIONS = 4


def preload(log: LocalLog, topic: str, pipeline: str, records: int) -> None:
    log.create_topic(topic, PARTITIONS)
    rng, make, now = random.Random(7), MAKERS[pipeline], time.time()
    per = records // PARTITIONS
    for p in range(PARTITIONS):
        log.append(topic, p, [make(rng, now + i / 1000.0) for i in range(per)])


def measure(cluster: LocalCluster, pipeline: str, executors: int, records: int, agent: bool, root: Path) -> float:
    topic = f"{pipeline}-{executors}-{int(agent)}-{time.monotonic_ns()}"
    log = LocalLog(root / "log")
    preload(log, topic, pipeline, records)
    spark = cluster.session(
        f"bench-{topic}", **{"spark.cores.max": str(executors), "spark.sql.shuffle.partitions": "4"}
    )
    handle = start_agent(spark, AgentConfig(port=0, max_executors=8)) if agent else None
    try:
        spec = PIPELINES[pipeline]
        frame = spec.build(
            spark,
            read_values(
                spark, source="local", topic=topic, path=str(root / "log"), max_per_trigger=records // PARTITIONS // 6
            ),
        )
        query = write_stream(
            frame,
            sink="noop",
            name=pipeline,
            output_mode=spec.output_mode,
            checkpoint=str(root / f"ckpt-{topic}"),
            trigger_s=0.1,
        ).start()
        deadline = time.monotonic() + 300
        while sum(p["numInputRows"] for p in query.recentProgress) < records and time.monotonic() < deadline:
            time.sleep(0.5)
        query.stop()
        batches = [p for p in query.recentProgress if p["numInputRows"] > 0][1:]
        rows = sum(p["numInputRows"] for p in batches)
        seconds = sum(p["batchDuration"] for p in batches) / 1000.0
        return rows / seconds if seconds else float("nan")
    finally:
        if handle is not None:
            handle.stop()
        spark.stop()


def run_pipelines(args: argparse.Namespace) -> int:
    pipelines = ["wordcount"] if args.quick else args.pipelines.split(",")
    results: dict[str, float] = {}
    print(
        f"cpu quota per executor: {args.cpus_per_executor if cpu_quota_support() else 'none'}; "
        f"cores on machine: {os.cpu_count()}"
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster(workers=args.executors, cpus_per_executor=args.cpus_per_executor) as cluster,
    ):
        root = Path(tmp)
        for pipeline in pipelines:
            for n in range(1, args.executors + 1):
                rate = measure(cluster, pipeline, n, args.records, agent=True, root=root)
                results[f"{pipeline} executors={n} agent=on"] = rate
                sb.say(f"{pipeline:10s} executors={n} agent=on  {rate:10.0f} records/s")
        if not args.no_overhead:
            rate = measure(cluster, "wordcount", 1, args.records, agent=False, root=root)
            results["wordcount executors=1 agent=off"] = rate
            sb.say(f"{'wordcount':10s} executors=1 agent=off {rate:10.0f} records/s")
    print(json.dumps(results))
    return 0


# --- a local-log reader with a cap per partition (defined here, so Spark pickles it by value) -----------------------

CAPPED_SOURCE = "daedalus_log_capped"


class PartitionCapReader(LocalLogStreamReader):
    """The local log reader with its own cap per partition (option `caps`, comma-separated): a skewed preload
    drained in capped batches keeps its skew, which one maxRecordsPerTrigger for all partitions would flatten."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        raw = {k.lower(): v for k, v in options.items()}.get("caps", "")
        self.caps = [int(c) for c in raw.split(",")] if raw else []

    def latestOffset(self, start: Any = None, limit: Any = None) -> Any:  # noqa: N802 - Spark's name
        offsets = super().latestOffset(None, limit)  # uncapped; remembers the live latest for reportLatestOffset
        if start is None or not self.caps:
            return offsets
        begin = start[self.topic]
        return {self.topic: {p: min(o, begin.get(p, 0) + self.caps[int(p)]) for p, o in offsets[self.topic].items()}}


class CappedLogSource(LocalLogDataSource):
    @classmethod
    def name(cls) -> str:
        return CAPPED_SOURCE

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's name
        return PartitionCapReader(dict(self.options))


def capped_values(spark: SparkSession, path: Path, topic: str, caps: Sequence[int] | None) -> DataFrame:
    spark.dataSource.register(CappedLogSource)
    reader = spark.readStream.format(CAPPED_SOURCE).option("path", str(path)).option("topic", topic)
    if caps:
        reader = reader.option("caps", ",".join(str(c) for c in caps))
    return reader.load().select("value")


# --- shared measurement pieces ------------------------------------------------------------------------------------


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


# --- saturation: even vs skewed partitions at 1..4 executors ------------------------------------------------------


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
        log_dir = job.root / "log"
        log = LocalLog(log_dir)
        for n in counts:
            took = job.scale_to(n)
            sb.say(f"executors={n}: live after {took:.1f} s: {job.live()}")
            runs: dict[str, dict[str, Any]] = {}
            for layout in ("small", "even", "zipf"):
                caps = layouts[layout]
                topic = f"sat-{layout}-{n}"
                rounds = args.warmup + args.batches
                rows_total = sb.preload(log, topic, caps, rounds, pool)
                run = drain(
                    job,
                    log_dir,
                    topic,
                    caps,
                    rows_total,
                    trigger_s=0.0,
                    warmup=args.warmup,
                    timeout_s=args.query_timeout_s,
                    name=f"sat_{layout}_{n}",
                )
                shutil.rmtree(log_dir / topic, ignore_errors=True)
                share_rec, share_time = busiest_observed(run["tasks"])
                run |= {
                    "executors": n,
                    "layout": layout,
                    "busiest_share_records_observed": share_rec,
                    "busiest_share_task_time_observed": share_time,
                    "task_fit": task_fit(run["tasks"]),
                }
                runs[layout] = run
                sb.say(
                    f"executors={n} {layout:5s}: {run['records_per_s']:9.0f} records/s "
                    f"(batch {run['batch_s_mean']:.2f} s, {sum(caps)} rows/batch, {run['measured']} batches; "
                    f"wall {run['wall_records_per_s']:.0f}/s), cpu {run['cpu_us_per_record']:.1f} us/record, "
                    f"busiest executor's records {share_rec:.3f}, task time {share_time:.3f}"
                )
            result["runs"].extend(compact(r) for r in runs.values())
            result.setdefault("predictions", []).append(predict(n, runs, weights_zipf, even, args.batch_records))
    result["loadavg_end"] = sb.loadavg()
    print_saturation_table(result)
    return result


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


# --- batch size: capped backlogs, a stepped ramp (steady states), a backlog worked off ------------------------------


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
        log_dir = job.root / "log"
        job.scale_to(counts[0])
        result["idle"] = idle_floor(job, args.idle_s)
        for n in counts:
            took = job.scale_to(n)
            sb.say(f"executors={n}: live after {took:.1f} s: {job.live()}")
            entry: dict[str, Any] = {"executors": n, "capped": [], "ramp": [], "backlog": {}}
            points: list[tuple[float, float]] = []
            tasks: list[list[dict[str, Any]]] = []
            # The stream first: it warms new executors (JIT, Python workers) before the capped batches.
            stream = ramp_and_backlog(job, n, args, pool)
            entry["ramp"], entry["backlog"] = stream["steps"], stream["backlog"]
            points += stream["points"]
            for cap in result["caps_per_partition"]:
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
                points += [(b["rows"], b["duration_s"]) for b in run["batches"][args.warmup :]]
                tasks += run["tasks"]
                run |= {"cap_per_partition": cap, "task_fit": task_fit(run["tasks"])}
                entry["capped"].append(compact(run))
                sb.say(
                    f"executors={n} capped {cap:6d}/partition: {cap * args.partitions:7d} rows/batch, batch "
                    f"{run['batch_s_mean']:.2f} s, {run['records_per_s']:8.0f} records/s, "
                    f"cpu {run['cpu_us_per_record']:7.1f} us/record ({sum(run['cpu_s'].values()):.1f} cpu-s)"
                )
            entry["batch_fit"] = batch_fit(points)
            entry["batch_fit_capped_only"] = batch_fit(
                [(b["rows"], b["duration_s"]) for c in entry["capped"] for b in c["batches"][args.warmup :]]
            )
            entry["task_fit"] = task_fit(tasks)
            entry["steady_max"] = steady_max(entry["ramp"])
            entry["points"] = [(int(r), round(d, 3)) for r, d in points]
            result["per_executors"].append(entry)
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
            sb.say(f"executors={n} steady-state maximum at the {args.trigger_s:g}-s trigger: {entry['steady_max']}")
    result["loadavg_end"] = sb.loadavg()
    return result


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


def per_second_rates(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """CPU cores per executor between consecutive sampler rows."""
    out: dict[str, list[float]] = {}
    for a, b in itertools.pairwise(rows):
        dt = b["t"] - a["t"]
        for e, v in b["cpu"].items():
            if e in a["cpu"] and dt > 0:
                out.setdefault(e, []).append((v - a["cpu"][e]) / dt)
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


# --- on Kafka: saturated throughput per pipeline at 1..N executors, the demo's cluster and trigger ------------------
def kafka_runs(spec: str) -> list[tuple[str, int, int]]:
    """`pipeline:rounds:records-per-executor-and-batch,...` parsed, each part checked."""
    runs = []
    for part in spec.split(","):
        fields = part.strip().split(":")
        if len(fields) != 3 or fields[0] not in PIPELINES or not fields[1].isdigit() or not fields[2].isdigit():
            raise SystemExit(
                f"--kafka-runs {part!r}: expected pipeline:rounds:records, pipeline one of {list(PIPELINES)}"
            )
        runs.append((fields[0], int(fields[1]), int(fields[2])))
    return runs


def produce(bootstrap: str, topic: str, pipeline: str, records: int, partitions: int) -> None:
    """`records` of the pipeline's kind into `topic`, round-robin over its partitions, event times 0.1 ms apart."""
    from daedalus_spark.workloads.generator import KafkaSink

    sink, rng, make, now = KafkaSink(bootstrap, topic, partitions), random.Random(7), MAKERS[pipeline], time.time()
    chunk = 10_000
    for start in range(0, records, chunk):
        batch = [make(rng, now + (start + i) / 10_000.0) for i in range(min(chunk, records - start))]
        for p in range(partitions):
            sink.send(p, batch[p::partitions])
    sink.flush()


def kafka_query_rate(
    job: sb.DemoJob, bootstrap: str, topic: str, run: tuple[str, int, int], n: int, args: argparse.Namespace
) -> dict[str, Any]:
    """One query from the topic's start at the demo's trigger, each batch capped at n x the run's records per
    executor (a backlog always waiting: saturated); the rate over the measured batches, start to end."""
    from daedalus_spark.workloads.pipeline import with_record_cost

    pipeline, rounds, per_executor = run
    spec = PIPELINES[pipeline]
    values = read_values(job.spark, source="kafka", topic=topic, bootstrap=bootstrap, max_per_trigger=n * per_executor)
    query = write_stream(
        spec.build(job.spark, with_record_cost(values, rounds)),
        sink="noop",
        name=f"{pipeline}-{rounds}-{n}",
        output_mode=spec.output_mode,
        checkpoint=str(job.root / f"ckpt-{topic}-{n}-{time.monotonic_ns()}"),
        trigger_s=args.trigger_s,
    ).start()
    t0, load = time.time(), sb.loadavg()
    try:
        sb.wait_until_batches(query, args.warmup + args.batches, args.query_timeout_s)
    finally:
        query.stop()
    rows = [r for r in sb.progress_rows(query, t0) if r["rows"] > 0][args.warmup : args.warmup + args.batches]
    span = rows[-1]["end"] - rows[0]["start"]
    return {
        "executors": n,
        "records_per_s": sum(r["rows"] for r in rows) / span,
        "batch_rows": statistics.median(r["rows"] for r in rows),
        "batch_s": statistics.median(r["duration_s"] for r in rows),
        "loadavg": [load, sb.loadavg()],
    }


def run_kafka(args: argparse.Namespace) -> dict[str, Any]:
    from daedalus_spark.kafkacluster.broker import LocalKafka
    from daedalus_spark.kafkacluster.jars import spark_jars_conf

    result: dict[str, Any] = sb.header("kafka") | {"cpus_per_executor": args.cpus_per_executor, "runs": []}
    counts = [int(c) for c in (args.executor_counts or "1,2,3,4").split(",")]
    runs = kafka_runs(args.kafka_runs)
    with (
        LocalKafka() as kafka,
        sb.demo_job(
            "bench-kafka-capacity",
            workers=max(counts),
            cpus_per_executor=args.cpus_per_executor,
            initial_executors=counts[0],
            conf=spark_jars_conf(),
        ) as job,
    ):
        for run in runs:
            pipeline, rounds, per_executor = run
            topic = f"{pipeline}-{rounds}"
            kafka.create_topic(topic, args.partitions)
            produce(
                kafka.bootstrap,
                topic,
                pipeline,
                max(counts) * per_executor * (args.warmup + args.batches + 1),
                args.partitions,
            )
            rates = []
            for n in counts:
                job.scale_to(n)
                row = kafka_query_rate(job, kafka.bootstrap, topic, run, n, args)
                rates.append(row)
                sb.say(
                    f"{pipeline:9s} rounds={rounds:<4d} executors={n}: {row['records_per_s']:9.0f} records/s "
                    f"(batches of {row['batch_rows']:.0f} in {row['batch_s']:.1f} s; load {row['loadavg']})"
                )
            result["runs"].append({"pipeline": pipeline, "record_cost_rounds": rounds, "rates": rates})
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", choices=("pipelines", "saturation", "batch-size", "kafka"), default="pipelines")
    parser.add_argument("--quick", action="store_true", help="pipelines: wordcount only, fewer records")
    parser.add_argument("--records", type=int, default=120_000, help="pipelines: records preloaded")
    parser.add_argument("--executors", type=int, default=3, help="pipelines: most executors; one worker each")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="pipelines: comma-separated subset")
    parser.add_argument("--no-overhead", action="store_true", help="pipelines: skip the run without the agent")
    parser.add_argument(
        "--cpus-per-executor",
        type=float,
        default=1.0,
        help="pipelines, kafka: cgroup CPU quota of each executor's worker",
    )
    demo = parser.add_argument_group("saturation and batch-size (the demo's cluster: 4 workers x 0.25 CPU)")
    demo.add_argument("--executor-counts", default=None, help="comma-separated (saturation 1,2,3,4; batch-size 2)")
    demo.add_argument("--partitions", type=int, default=8)
    demo.add_argument("--batch-records", type=int, default=1_200_000, help="saturation: rows per batch (even, zipf)")
    demo.add_argument("--small-per-partition", type=int, default=1000, help="saturation: rows/partition of `small`")
    demo.add_argument("--zipf-exponent", type=float, default=1.0)
    demo.add_argument(
        "--zipf-order",
        choices=("descending", "ascending"),
        default="descending",
        help="descending: partition 0 the largest (Spark's index order is then longest first)",
    )
    demo.add_argument("--warmup", type=int, default=1, help="batches of each query not measured")
    demo.add_argument("--batches", type=int, default=3, help="measured batches of each capped query")
    demo.add_argument("--caps", default="500,8000,64000", help="batch-size: records per partition and batch")
    demo.add_argument(
        "--rates", default="3000,10000,30000,80000,160000,240000", help="batch-size: ramp steps, records/s"
    )
    demo.add_argument(
        "--generator-max",
        type=float,
        default=40_000,
        help="batch-size: ramp steps above this rate are fed from a line pool (sparkbench.py feed), not the generator",
    )
    demo.add_argument("--step-s", type=float, default=30.0, help="batch-size: seconds per ramp step")
    demo.add_argument("--warm-s", type=float, default=15.0, help="batch-size: generator warm-up before the ramp")
    demo.add_argument("--backlog", type=int, default=1_000_000, help="batch-size: records appended at once")
    demo.add_argument("--backlog-s", type=float, default=30.0, help="batch-size: seconds to work the backlog off")
    demo.add_argument("--drain-s", type=float, default=20.0, help="batch-size: drain after an unbounded step")
    demo.add_argument("--idle-s", type=float, default=15.0, help="batch-size: idle CPU floor measured this long")
    demo.add_argument("--trigger-s", type=float, default=1.0, help="batch-size: trigger interval")
    demo.add_argument("--query-timeout-s", type=float, default=240.0)
    demo.add_argument(
        "--kafka-runs",
        default="wordcount:0:100000,ysb:0:100000,traffic:0:100000,wordcount:300:10000",
        help="kafka: pipeline:record-cost-rounds:records per executor and batch, comma-separated",
    )
    demo.add_argument("--json-out", default=str(sb.RESULTS), help="results file (sections merged)")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below on `timeout`/kill
    if args.experiment == "pipelines":
        return run_pipelines(args)
    started = time.monotonic()
    sb.say(f"cpu quota: {cpu_quota_support()}; cores: {os.cpu_count()}; {sb.command_line()}")
    if args.experiment == "kafka":
        result, section = run_kafka(args), f"kafka_{args.cpus_per_executor:g}cpu"
    elif args.experiment == "saturation":
        args.executor_counts = args.executor_counts or "1,2,3,4"
        result, section = run_saturation(args), "saturation"
    else:
        args.executor_counts = args.executor_counts or "2"
        result, section = run_batch_size(args), "batch_size"
    result["wall_s"] = round(time.monotonic() - started, 1)
    key = section if section != "saturation" or args.zipf_order == "descending" else "saturation_ascending"
    if section == "batch_size":
        key = f"batch_size_{args.executor_counts.replace(',', '_')}"
    path = sb.write_results(key, sb.strict(result), Path(args.json_out))
    print(json.dumps(sb.strict({k: v for k, v in result.items() if k not in ("runs", "per_executors")}), indent=1))
    print(f"written to {path} (section {key}); wall {result['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
