"""Benchmark (Spark): what an in-place scale-out and scale-in cost while WordCount runs, second by second.

The demo's setting by default (docs/demo.md): 4 standalone workers in cgroups of 0.25 CPU, one 1-core executor each,
WordCount on the local log (8 partitions), 1-s trigger, sink noop, the agent on; the generator feeds a constant rate
(--rate) for the whole run. The agent is asked for each target of --sequence in turn (repeated --repeats times;
e.g. 1 -> 2 -> 4 -> 2 -> 1). Every --sample-s the benchmark reads the agent's /metrics (per-executor records,
busy seconds, active tasks; live executors), the CPU exporter (worker cgroup CPU per executor), the driver's REST
API (/allexecutors: active, completed and failed tasks) and the log's lag. Per step it prints a per-second table
for the joining or leaving executor and the job, and a summary:
- scale-out: launch (the worker lists the executor), registration (the driver lists it), first task, first task
  finished, CPU seconds burned before the first task finished, the longest batch after the rescale against the
  median batch before, the job's extra lag (records delayed against steady processing) and the time until the lag
  is back at its level before the rescale;
- scale-in: leave (the driver no longer lists the executor), failed tasks and stage retries, the same job figures.
Summaries are merged into benchmarks/results/spark_local.json (section `rescale`, or --section).
--record-cost-rounds gives the demo's job (300); --conf sets the driver's SparkSession (e.g. spark.speculation=true).

The original small run (a 1-CPU worker pair, 300 lines/s, 0.5-s trigger, 2 partitions, join/leave times only) is
  python benchmarks/spark_rescale.py --workers 2 --cpus-per-executor 1 --partitions 2 --rate 300 --trigger-s 0.5 \
      --sequence 2,1 --repeats 3
Noisy: 2 cores shared by the driver, the executors, the generator and other work; every figure comes with the load
average.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sparkbench as sb  # the benchmarks' shared helpers, next to this file

from daedalus_spark import metricnames as names
from daedalus_spark.cliargs import key_value
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pipeline import with_record_cost
from daedalus_spark.workloads.source import read_values, write_stream


def sampler_for(job: sb.DemoJob, log: LocalLog, topic: str, t0: float, interval_s: float) -> sb.Sampler:
    def sample() -> dict[str, Any]:
        agent = sb.scrape(f"{job.agent.url}/metrics")
        rest = job.executors_rest()
        latest, committed, lag = sb.lag_records(log, topic)
        return {
            "records": sb.by_label(agent, names.EXECUTOR_RECORDS + "_total", "executor_id"),
            "busy": sb.by_label(agent, names.EXECUTOR_BUSY_SECONDS + "_total", "executor_id"),
            "active_tasks": sb.by_label(agent, names.EXECUTOR_ACTIVE_TASKS, "executor_id"),
            "live_agent": sb.total(agent, names.EXECUTORS),
            "query_rows": sb.total(agent, names.QUERY_INPUT_RECORDS + "_total"),
            "cpu": job.executor_cpu(),
            "rest_active": {str(e["id"]): bool(e.get("isActive")) for e in rest if e["id"] != "driver"},
            "rest_running": {str(e["id"]): int(e.get("activeTasks", 0)) for e in rest if e["id"] != "driver"},
            "completed": {str(e["id"]): int(e.get("completedTasks", 0)) for e in rest if e["id"] != "driver"},
            "failed": {str(e["id"]): int(e.get("failedTasks", 0)) for e in rest if e["id"] != "driver"},
            "latest": latest,
            "committed": committed,
            "lag": lag,
        }

    return sb.Sampler(sample, interval_s, t0=t0)


def first_time(rows: Sequence[dict[str, Any]], start: float, test: Any) -> float | None:
    for r in rows:
        if r["t"] >= start and test(r):
            return float(r["t"] - start)
    return None


def counter_at(rows: Sequence[dict[str, Any]], key: str, executor: str, t: float | None) -> float | None:
    """The last value of a per-executor counter at or before t."""
    if t is None:
        return None
    values = [r[key][executor] for r in rows if r["t"] <= t and executor in r[key]]
    return values[-1] if values else None


def stage_failures(job: sb.DemoJob, since_wall: float) -> dict[str, int]:
    """Over stages running at or submitted after `since_wall` (not completed before it): failed and killed tasks,
    and retried stage attempts."""
    failed = killed = retries = 0
    for s in sb.fetch_json(f"{job.api}/stages"):
        completed = s.get("completionTime")
        if completed and rest_time(completed) < since_wall:
            continue
        failed += int(s.get("numFailedTasks", 0))
        killed += int(s.get("numKilledTasks", 0))
        retries += int(int(s.get("attemptId", 0)) > 0)
    return {"failed_tasks": failed, "killed_tasks": killed, "stage_retries": retries}


def rest_time(text: str) -> float:
    """Epoch seconds of a Spark REST date ("2026-11-24T05:30:24.123GMT")."""
    return dt.datetime.strptime(text.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.UTC).timestamp()


def task_kind(metrics: dict[str, Any]) -> str:
    """`source` (reads the log, writes the shuffle) or `state` (reads the shuffle: the stateful aggregation)."""
    read = (metrics.get("inputMetrics") or {}).get("recordsRead", 0)
    written = (metrics.get("shuffleWriteMetrics") or {}).get("bytesWritten", 0)
    return "source" if read or written else "state"


def first_tasks_on(job: sb.DemoJob, executor: str, after_stage: int, count: int = 3) -> list[dict[str, Any]]:
    """The first tasks the executor ran (stages after `after_stage`): which stage kind (source = reads the log;
    state = the stateful aggregation), how long, and where the time went (deserialize, run, GC, JVM CPU)."""
    tasks = []
    for s in sb.fetch_json(f"{job.api}/stages"):
        if int(s["stageId"]) <= after_stage:
            continue
        url = f"{job.api}/stages/{s['stageId']}/{s['attemptId']}/taskList?length=10000"
        for t in sb.fetch_json(url):
            if str(t.get("executorId")) != executor:
                continue
            m = t.get("taskMetrics") or {}
            tasks.append(
                {
                    "stage": int(s["stageId"]),
                    "kind": task_kind(m),
                    "status": t.get("status"),
                    "launch": rest_time(t["launchTime"]) if t.get("launchTime") else math.nan,
                    "duration_s": t.get("duration", 0) / 1000.0,
                    "deserialize_s": m.get("executorDeserializeTime", 0) / 1000.0,
                    "run_s": m.get("executorRunTime", 0) / 1000.0,
                    "gc_s": m.get("jvmGcTime", 0) / 1000.0,
                    "jvm_cpu_s": m.get("executorCpuTime", 0) / 1e9,
                    "records": (m.get("inputMetrics") or {}).get("recordsRead", 0),
                }
            )
    return sorted(tasks, key=lambda t: t["launch"])[:count]


def per_second(
    rows: Sequence[dict[str, Any]], batches: Sequence[dict[str, Any]], t_put: float, end: float, focus: str | None
) -> list[dict[str, Any]]:
    """1-s bins from 5 s before the rescale: the job's records (batches completing in the second), lag, live
    executors; the focus executor's CPU cores, task-busy rate, records rate, running tasks and finished tasks."""
    out = []
    for second in range(-5, int(end - t_put)):
        a, b = t_put + second, t_put + second + 1
        inside = [r for r in rows if a <= r["t"] < b]
        prev = [r for r in rows if r["t"] < a]
        row: dict[str, Any] = {"s": second}
        row["job_records"] = sum(x["rows"] for x in batches if a <= x["end"] < b)
        row["lag"] = inside[-1]["lag"] if inside else None
        row["live"] = sum(inside[-1]["rest_active"].values()) if inside else None
        if focus is not None and inside and prev:
            last, before = inside[-1], prev[-1]
            span = last["t"] - before["t"]

            def rate(key: str, last: dict[str, Any] = last, before: dict[str, Any] = before, span: float = span) -> Any:
                if focus in last[key] and focus in before[key] and span > 0:
                    return (last[key][focus] - before[key][focus]) / span
                return None

            row["cpu_cores"] = rate("cpu")
            row["busy_rate"] = rate("busy")
            row["records_rate"] = rate("records")
            row["running_tasks"] = last["rest_running"].get(focus)
            row["completed_tasks"] = last["completed"].get(focus)
            row["listed_by_worker"] = focus in last["cpu"]
            row["registered"] = last["rest_active"].get(focus, False)
        out.append(row)
    return out


def print_series(series: Sequence[dict[str, Any]], focus: str | None) -> None:
    print(
        f"  {'s':>4} {'job rec':>8} {'lag':>8} {'live':>4} | executor {focus}: {'cpu':>5} {'busy':>5} {'rec/s':>7} "
        f"{'run':>3} {'done':>4} {'worker':>6} {'driver':>6}"
    )

    def f(v: Any, spec: str) -> str:
        return format(v, spec) if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"

    for r in series:
        print(
            f"  {r['s']:>4} {r['job_records']:>8} {f(r['lag'], '8.0f'):>8} {f(r['live'], '4d'):>4} | "
            f"{'':>{len(str(focus)) + 10}}{f(r.get('cpu_cores'), '5.2f'):>5} {f(r.get('busy_rate'), '5.2f'):>5} "
            f"{f(r.get('records_rate'), '7.0f'):>7} {f(r.get('running_tasks'), '3d'):>3} "
            f"{f(r.get('completed_tasks'), '4d'):>4} {r.get('listed_by_worker', '-')!s:>6} "
            f"{r.get('registered', '-')!s:>6}"
        )


def analyze(
    job: sb.DemoJob,
    sampler: sb.Sampler,
    batches: Sequence[dict[str, Any]],
    step: dict[str, Any],
    rate: float,
    settle_s: float,
) -> dict[str, Any]:
    rows, t_put, end = sampler.rows, step["t_put"], step["t_end"]
    pre = [r for r in rows if t_put - settle_s <= r["t"] < t_put]
    post = [r for r in rows if t_put <= r["t"] <= end]
    base_mean = statistics.mean(r["lag"] for r in pre) if pre else math.nan
    base_max = max((r["lag"] for r in pre), default=math.nan)
    pre_batches = [b for b in batches if b["end"] < t_put][-4:]
    post_batches = [b for b in batches if b["end"] >= t_put and b["start"] <= end]
    median_pre = statistics.median(b["duration_s"] for b in pre_batches) if pre_batches else math.nan
    peak = max(post, key=lambda r: r["lag"]) if post else None
    recovered = first_time(rows, peak["t"], lambda r: r["lag"] <= base_max) if peak else None
    out: dict[str, Any] = {
        "from": step["from"],
        "to": step["to"],
        "kind": "out" if step["to"] > step["from"] else "in",
        "executor": step["focus"],
        "loadavg": step["loadavg"],
        "lag_before_mean": base_mean,
        "batch_before_median_s": median_pre,
        "longest_batch_after_s": max((b["duration_s"] for b in post_batches), default=math.nan),
        "extra_batch_s": sum(max(0.0, b["duration_s"] - median_pre) for b in post_batches),
        "extra_lag_peak_records": (peak["lag"] - base_mean) if peak else math.nan,
        "extra_lag_peak_s_of_input": (peak["lag"] - base_mean) / rate if peak else math.nan,
        "peak_at_s": peak["t"] - t_put if peak else math.nan,
        "lag_back_s": (peak["t"] - t_put + recovered) if peak and recovered is not None else None,
        "failed_tasks_rest": sum(post[-1]["failed"].values()) - sum(pre[-1]["failed"].values()) if pre and post else 0,
    }
    out |= stage_failures(job, step["wall_put"])
    e = step["focus"]
    if out["kind"] == "out" and e is not None:
        launch = first_time(rows, t_put, lambda r: e in r["cpu"])
        registered = first_time(rows, t_put, lambda r: r["rest_active"].get(e, False))
        first_task = first_time(rows, t_put, lambda r: r["rest_running"].get(e, 0) > 0 or r["completed"].get(e, 0) > 0)
        first_done = first_time(rows, t_put, lambda r: r["completed"].get(e, 0) > 0)
        first_records = first_time(rows, t_put, lambda r: r["records"].get(e, 0) > 0)

        def cpu_between(a: float | None, b: float | None) -> float | None:
            if a is None or b is None:
                return None
            x = counter_at(rows, "cpu", e, t_put + b)
            y = [r["cpu"][e] for r in rows if r["t"] >= t_put + a and e in r["cpu"]]
            return None if x is None or not y else x - y[0]

        out |= {
            "launch_s": launch,
            "registration_s": registered,
            "first_task_s": first_task,
            "first_task_done_s": first_done,
            "first_records_s": first_records,
            "stall_s": (first_done - first_task) if first_done is not None and first_task is not None else None,
            "cpu_s_launch_to_registration": cpu_between(launch, registered),
            "cpu_s_registration_to_first_task_done": cpu_between(registered, first_done),
        }
    elif e is not None:
        out["leave_s"] = first_time(rows, t_put, lambda r: not r["rest_active"].get(e, False))
        out["leave_worker_s"] = first_time(rows, t_put, lambda r: e not in r["cpu"])
        out["failed_tasks_leaving_executor"] = (
            (max((r["failed"].get(e, 0) for r in post), default=0) - pre[-1]["failed"].get(e, 0)) if pre else 0
        )
    return out


def summary(steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Median (min-max) of each figure per transition."""
    out: dict[str, Any] = {}
    for key in sorted({(s["from"], s["to"]) for s in steps}):
        group = [s for s in steps if (s["from"], s["to"]) == key]
        figures: dict[str, Any] = {"repetitions": len(group)}
        for name in group[0]:
            values = [s[name] for s in group if isinstance(s.get(name), (int, float)) and not isinstance(s[name], bool)]
            values = [v for v in values if math.isfinite(v)]
            if values and name not in ("from", "to"):
                figures[name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        out[f"{key[0]}->{key[1]}"] = figures
    return out


SUMMARY_FIGURES = (
    ("launch_s", "launch (worker lists it), s"),
    ("registration_s", "registration (driver lists it), s"),
    ("first_task_s", "first task running, s"),
    ("first_task_done_s", "first task finished, s"),
    ("stall_s", "first task's duration (state load), s"),
    ("cpu_s_launch_to_registration", "CPU-s launch -> registration"),
    ("cpu_s_registration_to_first_task_done", "CPU-s registration -> first task done"),
    ("leave_s", "leave (driver drops it), s"),
    ("leave_worker_s", "gone from its worker, s"),
    ("failed_tasks", "failed tasks (stages)"),
    ("killed_tasks", "killed tasks (stages)"),
    ("stage_retries", "stage retries"),
    ("batch_before_median_s", "median batch before, s"),
    ("longest_batch_after_s", "longest batch after, s"),
    ("extra_batch_s", "batch time beyond the median, s"),
    ("extra_lag_peak_records", "extra lag at peak, records"),
    ("extra_lag_peak_s_of_input", "extra lag at peak, s of input"),
    ("lag_back_s", "lag back at its level, s"),
)


def print_summary(table: dict[str, Any]) -> None:
    keys = list(table)
    print("\nRescale costs: median (min-max) over repetitions")
    print(f"{'':42s}" + "".join(f"{k:>22s}" for k in keys))
    print(f"{'repetitions':42s}" + "".join(f"{table[k]['repetitions']:>22d}" for k in keys))
    for name, label in SUMMARY_FIGURES:
        cells = []
        for k in keys:
            fig = table[k].get(name)
            cells.append(f"{fig['median']:.1f} ({fig['min']:.1f}-{fig['max']:.1f})" if fig else "-")
        if any(c != "-" for c in cells):
            print(f"{label:42s}" + "".join(f"{c:>22s}" for c in cells))


def wait_steady(sampler: sb.Sampler, rate: float, max_wait_s: float, lag_s: float) -> float:
    """Wait (bounded) until the lag is below `lag_s` seconds of input; returns the seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < max_wait_s:
        if sampler.rows and sampler.rows[-1]["lag"] <= lag_s * rate:
            break
        time.sleep(0.5)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--cpus-per-executor", type=float, default=0.25)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rate", type=float, default=6000.0, help="generator records/s for the whole run")
    parser.add_argument("--trigger-s", type=float, default=1.0)
    parser.add_argument("--initial", type=int, default=1, help="executors before the first step")
    parser.add_argument("--sequence", default="2,4,2,1", help="targets applied in turn (each repetition)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--observe-out-s", type=float, default=45.0, help="seconds observed after a scale-out")
    parser.add_argument("--observe-in-s", type=float, default=30.0, help="seconds observed after a scale-in")
    parser.add_argument("--settle-s", type=float, default=10.0, help="baseline window before each step")
    parser.add_argument("--steady-lag-s", type=float, default=10.0, help="wait before a step until lag < this")
    parser.add_argument("--sample-s", type=float, default=0.5)
    parser.add_argument("--no-worker-start", action="store_true", help="do not time one worker's start")
    parser.add_argument(
        "--record-cost-rounds", type=int, default=0, help="SHA-256 rounds per line (the demo's job: 300), 0 = none"
    )
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE for the driver's SparkSession")
    parser.add_argument("--json-out", default=str(sb.RESULTS))
    parser.add_argument("--section", default="rescale", help="the section of --json-out written")
    args = parser.parse_args()
    try:
        conf = dict(key_value(setting, "--conf") for setting in args.conf)
    except ValueError as exc:
        parser.error(str(exc))
    sb.install_sigterm()
    started = time.monotonic()
    result: dict[str, Any] = sb.header("rescale") | {
        "rate": args.rate,
        "trigger_s": args.trigger_s,
        "partitions": args.partitions,
        "workers": args.workers,
        "cpus_per_executor": args.cpus_per_executor,
        "sample_s": args.sample_s,
        "record_cost_rounds": args.record_cost_rounds,
        "conf": conf,
        "steps": [],
    }
    sb.say(f"{sb.command_line()}")
    topic = "words"
    targets = [int(t) for t in args.sequence.split(",")] * args.repeats
    with sb.demo_job(
        "bench-rescale",
        workers=args.workers,
        cpus_per_executor=args.cpus_per_executor,
        initial_executors=args.initial,
        start_workers=None if args.no_worker_start else args.workers - 1,
        conf=conf,
    ) as job:
        log = LocalLog(job.root / "log")
        log.create_topic(topic, args.partitions)
        took = job.scale_to(args.initial)
        sb.say(f"{args.initial} executor(s) live after {took:.1f} s")
        t0_wall = time.time()
        t0 = time.monotonic()
        with (
            sampler_for(job, log, topic, t0, args.sample_s) as sampler,
            sb.generator(job.root / "log", topic, args.partitions, [args.rate] * 3600, job.root) as gen,
        ):
            query = write_stream(
                wordcount.build(
                    job.spark,
                    with_record_cost(
                        read_values(job.spark, source="local", topic=topic, path=str(log.root)), args.record_cost_rounds
                    ),
                ),
                sink="noop",
                name="wordcount",
                output_mode="update",
                checkpoint=str(job.root / "ckpt"),
                trigger_s=args.trigger_s,
            ).start()
            try:
                sb.wait_until_batches(query, 5, timeout_s=180)
                waited = wait_steady(sampler, args.rate, 60, args.steady_lag_s)
                sb.say(f"query warm ({len(query.recentProgress)} batches), steady after {waited:.0f} s more")
                current = args.initial
                for target in targets:
                    if gen.poll() is not None:
                        raise RuntimeError(f"generator exited with {gen.returncode}")
                    wait_steady(sampler, args.rate, 45, args.steady_lag_s)
                    before = set(job.live())
                    stage_mark = job.max_stage_id() - 2  # the running batch's stages too
                    t_put, wall_put, load = sampler.now(), time.time(), sb.loadavg()
                    answer = job.put_target(target)
                    observe = args.observe_out_s if target > current else args.observe_in_s
                    time.sleep(observe)
                    after = set(job.live())
                    if target > current:
                        joined = sorted(after - before, key=int)
                        focus = joined[0] if joined else None
                    else:
                        focus = (answer.get("leaving") or [None])[0]
                    step = {
                        "from": current,
                        "to": target,
                        "t_put": t_put,
                        "t_end": sampler.now(),
                        "wall_put": wall_put,
                        "focus": focus,
                        "loadavg": load,
                    }
                    batches = [b for b in sb.progress_rows(query, t0_wall) if b["rows"] > 0]
                    figures = analyze(job, sampler, batches, step, args.rate, args.settle_s)
                    if target > current and focus is not None:
                        figures["first_tasks"] = first_tasks_on(job, focus, stage_mark)
                        for t in figures["first_tasks"]:
                            t["launch_s"] = t.pop("launch") - wall_put
                    series = per_second(sampler.rows, batches, t_put, step["t_end"], focus)
                    figures["series"] = series
                    result["steps"].append(figures)
                    sb.say(f"\nstep {current} -> {target} (executor {focus}; live now {sorted(after, key=int)})")
                    print_series(series, focus)
                    shown = {k: v for k, v in figures.items() if k != "series"}
                    print("  " + json.dumps(sb_round(shown)), flush=True)
                    current = target
                    if len(after) != target:
                        sb.say(f"  (live {len(after)} != target {target} at the end of the window; waiting)")
                        job.scale_to(target, stable_s=2.0)
            finally:
                query.stop()
    result["summary"] = summary(result["steps"])
    result["loadavg_end"] = sb.loadavg()
    result["wall_s"] = round(time.monotonic() - started, 1)
    print_summary(result["summary"])
    sb.say(f"wall {result['wall_s']:.0f} s")
    path = sb.write_results(args.section, sb.strict(result), Path(args.json_out))
    print(json.dumps(sb.strict(result["summary"]), indent=1))
    print(f"written to {path} (section {args.section})")
    return 0


def sb_round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 2) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: sb_round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sb_round(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
