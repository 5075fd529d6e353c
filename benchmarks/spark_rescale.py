"""Benchmark (Spark): how long an executor takes to join and to leave a running WordCount query via the agent.

Join = from the PUT of target 2 until the driver lists 2 live executors; leave = from the PUT of target 1 until
it lists 1. A worker's own start (JVM up, registered at the master) is timed too. Noisy: 2 shared cores.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.generator import Generator, LocalLogSink
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream

REPEATS = 3


def executors(url: str) -> int:
    with urllib.request.urlopen(f"{url}/executors", timeout=10) as r:
        return int(json.load(r)["current"])


def set_target(url: str, target: int, timeout_s: float = 120.0) -> float:
    start = time.monotonic()
    body = json.dumps({"target": target}).encode()
    urllib.request.urlopen(urllib.request.Request(f"{url}/executors", data=body, method="PUT"), timeout=30).close()
    while executors(url) != target:
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"target {target} not reached")
        time.sleep(0.1)
    return time.monotonic() - start


def main() -> int:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below on `timeout`/kill
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(workers=1) as cluster:
        t0 = time.monotonic()
        cluster.add_worker()
        print(f"worker start (JVM up, registered): {time.monotonic() - t0:.1f} s")
        log = LocalLog(Path(tmp) / "log")
        log.create_topic("words", 2)
        spark = cluster.session("bench-rescale")
        agent = start_agent(spark, AgentConfig(port=0, max_executors=2))
        stop = threading.Event()
        gen = Generator(PaceKeeper(Pacer(np.full(3600, 300.0))), LocalLogSink(log, "words", 2), wordcount_line, "words")
        threading.Thread(target=gen.run, kwargs={"stop": stop, "report": lambda _: None}, daemon=True).start()
        query = None
        try:
            frame = wordcount.build(
                spark, read_values(spark, source="local", topic="words", path=str(Path(tmp) / "log"))
            )
            query = write_stream(
                frame,
                sink="noop",
                name="wordcount",
                output_mode="update",
                checkpoint=str(Path(tmp) / "ckpt"),
                trigger_s=0.5,
            ).start()
            set_target(agent.url, 1)
            joins, leaves = [], []
            for _ in range(REPEATS):
                joins.append(set_target(agent.url, 2))
                time.sleep(3)  # let the new executor take tasks before it is asked to leave
                leaves.append(set_target(agent.url, 1))
            print(f"executor join  (target 1->2): median {statistics.median(joins):.1f} s  all {joins}")
            print(f"executor leave (target 2->1): median {statistics.median(leaves):.1f} s  all {leaves}")
            print(f"query active after rescales: {query.isActive}")
        finally:
            stop.set()
            if query is not None:
                query.stop()
            agent.stop()
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
