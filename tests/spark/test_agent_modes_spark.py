"""Spark tests: the agent in the modes it cannot serve, on real Spark — `local[*]` and dynamic allocation on a
standalone cluster. Targets are refused (HTTP 409 naming the mode), nothing is reconciled, and metrics keep flowing."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import request, scrape, total, wait_until

pytestmark = pytest.mark.spark
TOPIC = "words"


@contextmanager
def agent_on(spark: SparkSession, root: Path) -> Iterator[str]:
    """The agent (asked for an initial target, which a refusing mode ignores) and WordCount on 20 lines."""
    log = LocalLog(root / "log")
    log.create_topic(TOPIC, 2)
    agent = start_agent(
        spark,
        AgentConfig(port=0, max_executors=2, poll_s=0.5, initial_target=2),
        latest_offsets={TOPIC: lambda: log.latest_offsets(TOPIC)},
    )
    frame = wordcount.build(spark, read_values(spark, source="local", topic=TOPIC, path=str(root / "log")))
    query = write_stream(
        frame, sink="memory", name="modes", output_mode="update", checkpoint=str(root / "ckpt"), trigger_s=0.5
    ).start()
    try:
        for partition in (0, 1):
            log.append(TOPIC, partition, [f"a b c {i}" for i in range(10)])
        yield agent.url
    finally:
        query.stop()
        agent.stop()


def assert_refuses_and_keeps_reporting(url: str, mode: str) -> None:
    wait_until(lambda: total(scrape(url), "daedalus_spark_query_input_records_total") == 20, "the 20 lines counted", 90)
    code, reply = request(f"{url}/executors", "PUT", {"target": 2})
    assert code == 409 and mode in reply["error"], reply
    status = request(f"{url}/executors")[1]
    assert mode in status["refusing"] and status["target"] is None  # neither the PUT nor the initial target stuck
    metrics = scrape(url)
    assert total(metrics, "daedalus_spark_lag_records") == 0
    assert ("daedalus_spark_executors", ()) in {(n, ()) for n, _ in metrics}


def test_local_mode_refuses_targets_and_reports_metrics(tmp_path: Path) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("daedalus-test-local-mode")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    try:
        with agent_on(spark, tmp_path) as url:
            assert_refuses_and_keeps_reporting(url, "local mode")
    finally:
        spark.stop()


def test_dynamic_allocation_refuses_targets_and_reports_metrics(tmp_path: Path) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    settings = {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "1",
        "spark.dynamicAllocation.maxExecutors": "2",
    }
    with LocalCluster(workers=1, memory_per_worker="1g") as cluster:
        spark = cluster.session("daedalus-test-da-mode", **settings)
        try:
            with agent_on(spark, tmp_path) as url:
                assert_refuses_and_keeps_reporting(url, "dynamic allocation")
                assert request(f"{url}/executors")[1]["current"] >= 1  # Spark's own manager brought one
        finally:
            spark.stop()
