"""spark_capacity.py `--experiment pipelines`: each pipeline drains a preloaded backlog at 1..N executors, with the
agent and (WordCount at 1 executor) without it."""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

import sparkbench as sb  # the benchmarks' shared helpers, in benchmarks/

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.sparkcluster import LocalCluster, cpu_quota_support
from daedalus_spark.workloads import traffic, wordcount, ysb
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.records import MAKERS
from daedalus_spark.workloads.source import read_values, write_stream

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
