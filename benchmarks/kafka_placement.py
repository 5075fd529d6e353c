"""Benchmark (Spark on Kafka): where Spark's Kafka source runs each partition's task — the busiest executor's share
of the records at 1-4 executors with skewed partitions — against the placement model (analyze/partitions.py:
`kafka`, each partition pinned to executor floorMod(TopicPartition.hashCode(), n); `any_core`, longest first).

A local broker, a topic of 8 partitions produced at a steady rate with a 5:3:2:2:1:1:1:1 skew, WordCount on a
4-worker standalone cluster (one 1-core executor each) with the agent, and the executor count stepped 1 -> 4 -> 1
through the agent's target. At each count, after the executors settle, the records each executor's tasks read over
a window (the agent's per-executor counter) give the shares. Prints a table; writes
benchmarks/results/kafka_placement.json.

  python benchmarks/kafka_placement.py [--rate 1200] [--window-s 40]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from daedalus_spark import metricnames as names
from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.agent.offset_commit import commit_offsets
from daedalus_spark.analyze.partitions import busiest_share
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.jars import spark_jars_conf
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.waiting import wait_until
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream

OUT = Path(__file__).parent / "results" / "kafka_placement.json"
TOPIC = "placement"
WEIGHTS = [5.0, 3.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0]
STEPS = (1, 2, 3, 4, 3, 2, 1)


def executor_records(agent_url: str) -> dict[str, float]:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{agent_url}/metrics", timeout=10) as r:
        families = list(text_string_to_metric_families(r.read().decode()))
    return {
        s.labels["executor_id"]: s.value
        for f in families
        for s in f.samples
        if s.name == names.total(names.EXECUTOR_RECORDS)
    }


def set_target(agent_url: str, target: int) -> None:
    """PUT the target; a 409 (Spark declined a removal already under way) is printed and the count waited for."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{agent_url}/executors", data=json.dumps({"target": target}).encode(), method="PUT"
    )
    try:
        with urllib.request.urlopen(request, timeout=30):
            pass
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise
        print(f"target {target}: {exc.read().decode()}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rate", type=float, default=1200.0, help="records/s produced")
    p.add_argument("--window-s", type=float, default=40.0)
    p.add_argument("--settle-s", type=float, default=20.0)
    args = p.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    weights = {(TOPIC, i): w for i, w in enumerate(WEIGHTS)}
    rows = []
    root = Path(tempfile.mkdtemp(prefix="daedalus-placement-"))
    with LocalKafka() as kafka:
        kafka.create_topic(TOPIC, len(WEIGHTS))
        sink = KafkaSink(kafka.bootstrap, TOPIC, len(WEIGHTS))
        generator = Generator(
            PaceKeeper(Pacer(np.full(3600, args.rate))), sink, wordcount_line, TOPIC, tick_s=0.1, weights=WEIGHTS
        )
        producing = threading.Thread(target=generator.run, kwargs={"report": lambda _: None}, daemon=True)
        producing.start()
        try:
            with LocalCluster(workers=4, memory_per_worker="768m") as cluster:
                spark = cluster.session("daedalus-kafka-placement", **spark_jars_conf())
                agent = start_agent(spark, AgentConfig(port=0, max_executors=4, poll_s=1.0, initial_target=1))
                commits = commit_offsets(spark, "placement", kafka.bootstrap, query_name="wordcount")
                frame = wordcount.build(
                    spark, read_values(spark, source="kafka", topic=TOPIC, bootstrap=kafka.bootstrap)
                )
                query = write_stream(
                    frame,
                    sink="noop",
                    name="wordcount",
                    output_mode="update",
                    checkpoint=str(root / "ckpt"),
                    trigger_s=1,
                ).start()
                try:
                    for n in STEPS:
                        set_target(agent.url, n)
                        wait_until(
                            lambda n=n: spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1 == n,
                            f"{n} executors",
                            180,
                        )
                        time.sleep(args.settle_s)
                        before = executor_records(agent.url)
                        time.sleep(args.window_s)
                        after = executor_records(agent.url)
                        read = {e: after[e] - before.get(e, 0.0) for e in after if after[e] - before.get(e, 0.0) > 0}
                        total = sum(read.values())
                        row = {
                            "executors": n,
                            "records": total,
                            "per_executor": read,
                            "busiest_share": max(read.values()) / total if total else float("nan"),
                            "model_kafka": busiest_share(weights, n, "kafka"),
                            "model_any_core": busiest_share(weights, n, "any_core"),
                        }
                        rows.append(row)
                        print(
                            f"{n} executors: busiest {row['busiest_share']:.3f} (model kafka "
                            f"{row['model_kafka']:.3f}, any_core {row['model_any_core']:.3f}); "
                            f"records per executor {sorted(read.values(), reverse=True)}",
                            flush=True,
                        )
                finally:
                    query.stop()
                    commits.stop()
                    agent.stop()
                    spark.stop()
        finally:
            generator.keeper.pacer = Pacer(np.zeros(0))
            producing.join(timeout=30)
    OUT.write_text(json.dumps({"weights": WEIGHTS, "rate_per_s": args.rate, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
