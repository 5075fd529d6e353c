"""Spark test: the committing listener on a real listener bus (local[1], the local log source): it commits the end
offsets of the query's last batch, and a commit that cannot reach a broker (kafka-python's own client, nothing
listening) is counted while the query runs to its end."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("kafka")

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from daedalus_spark.agent import KafkaCommitter, commit_offsets
from daedalus_spark.agent.offset_commit import Partition, end_offsets, is_kafka_source
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.source import read_values
from tests.spark.helpers import wait_until

pytestmark = pytest.mark.spark
TOPIC = "orders"
ALL = {(TOPIC, 0): 25, (TOPIC, 1): 25}


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[1]")
        .appName("daedalus-test-offset-commit")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


@contextmanager
def running_query(spark: SparkSession, root: Path, name: str) -> Iterator[StreamingQuery]:
    """A query over 2 × 25 records in the local log, read at most 10 per partition a batch (so in several batches);
    stopped on the way out."""
    log = LocalLog(root / "log")
    log.create_topic(TOPIC, 2)
    for partition in (0, 1):
        log.append(TOPIC, partition, [f"r{i}" for i in range(25)])
    frame = read_values(spark, source="local", topic=TOPIC, path=str(root / "log"), max_per_trigger=10)
    writer = frame.writeStream.queryName(name).format("noop").option("checkpointLocation", str(root / "ckpt"))
    query = writer.trigger(processingTime="0.2 seconds").start()
    try:
        yield query
    finally:
        query.stop()


def last_end_offsets(query: StreamingQuery) -> dict[Partition, int]:
    """The end offsets of the query's last progress, read by the listener's own parser (all sources admitted)."""
    last = query.lastProgress
    sources = [SimpleNamespace(**s) for s in last["sources"]] if last else []
    assert not any(is_kafka_source(s.description) for s in sources)  # the local log is not Kafka
    return end_offsets(sources, lambda _: True)


def read_all(query: StreamingQuery) -> dict[Partition, int]:
    wait_until(lambda: last_end_offsets(query) == ALL, "the query read all 50 records", 60.0)
    assert query.isActive and query.exception() is None
    return last_end_offsets(query)


def test_commits_the_last_batch_end_offsets(spark: SparkSession, tmp_path: Path) -> None:
    recorded: list[dict[Partition, int]] = []
    commits = commit_offsets(
        spark, committer=lambda offsets: recorded.append(dict(offsets)), commit_source=lambda _: True
    )
    try:
        with running_query(spark, tmp_path, "committed") as query:
            expected = read_all(query)
            assert len(query.recentProgress) >= 3  # 25 records at 10 a batch: at least 3 batches
        wait_until(lambda: commits.listener.committed == expected, "the last batch's end offsets committed", 30.0)
        assert commits.listener.wait_idle(10.0)
        assert recorded[-1] == expected  # the last batch moved both partitions
        assert all(a[k] < b[k] for a, b in pairwise(recorded) for k in b if k in a)  # only ever forward
        assert commits.listener.failures == 0
    finally:
        commits.stop()


def test_no_broker_counts_failures_and_the_query_keeps_running(spark: SparkSession, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    committer = KafkaCommitter("orders-committer", f"127.0.0.1:{port}", timeout_ms=1000)
    commits = commit_offsets(spark, committer=committer, commit_source=lambda _: True)
    try:
        with running_query(spark, tmp_path, "no_broker") as query:
            read_all(query)  # every batch ran and the query is still active, without an exception
            wait_until(lambda: commits.listener.failures >= 1, "a failed commit counted", 30.0)
            assert commits.listener.wait_idle(30.0)
            assert query.isActive and query.exception() is None
        assert commits.listener.committed == {} and commits.listener.commits == 0
    finally:
        commits.stop()
