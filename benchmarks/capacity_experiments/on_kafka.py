"""spark_capacity.py `--experiment kafka`: saturated throughput per pipeline at 1..N executors reading a local Kafka
broker, on the demo's cluster and trigger."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import numpy as np
import sparkbench as sb  # the benchmarks' shared helpers, in benchmarks/

from capacity_experiments.pipelines import PIPELINES
from daedalus_spark.analyze.batches import BatchFit
from daedalus_spark.workloads.records import MAKERS
from daedalus_spark.workloads.source import read_values, write_stream


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


def at_objective(runs: list[dict[str, Any]], trigger_s: float, target_latency_s: float) -> list[dict[str, Any]]:
    """Per pipeline, rounds and executor count measured at two batch sizes or more: the batch line (seconds per batch
    = fixed + records x seconds per record, least squares over the batches' sizes and the seconds each took at the
    measured rate) and the rate it gives within the latency objective, read as the controller reads a learned line
    (analyze/batches.py `at_latency_per_s`: back-to-back batches of at most half the objective)."""
    sizes: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
    for run in runs:
        for row in run["rates"]:
            key = (run["pipeline"], run["record_cost_rounds"], row["executors"])
            sizes.setdefault(key, []).append((float(row["batch_rows"]), float(row["records_per_s"])))
    lines = []
    for (pipeline, rounds, n), measured in sorted(sizes.items()):
        if len({size for size, _ in measured}) < 2:
            continue
        records = np.array([size for size, _ in measured])
        per_record_s, fixed_s = np.polyfit(records, records / np.array([rate for _, rate in measured]), 1)
        row = {"pipeline": pipeline, "record_cost_rounds": rounds, "executors": n}
        row |= {"fixed_s": round(float(fixed_s), 3), "per_record_ms": round(float(per_record_s) * 1000, 5)}
        if per_record_s > 0 and fixed_s >= 0:
            fit = BatchFit(float(fixed_s), float(per_record_s), float(records.max()))
            row["at_objective_per_s"] = round(fit.at_latency_per_s(trigger_s, target_latency_s) or 0.0)
        else:
            row["at_objective_per_s"] = None  # no cost line: records took less time in the larger batches
        lines.append(row)
    return lines


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
            topic = f"{pipeline}-{rounds}-{per_executor}"  # one topic per run: runs may share a pipeline
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
    result["at_objective"] = at_objective(result["runs"], args.trigger_s, args.target_latency_s)
    for row in result["at_objective"]:
        sb.say(
            f"{row['pipeline']:9s} rounds={row['record_cost_rounds']:<4d} executors={row['executors']}: batch line "
            f"{row['fixed_s']:.2f} s + {row['per_record_ms']:.4f} ms per record; within a "
            f"{args.target_latency_s:g}-s latency objective: {row['at_objective_per_s']} records/s"
        )
    return result
