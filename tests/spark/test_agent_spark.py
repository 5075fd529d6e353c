"""Spark tests: generator → local log → WordCount on a standalone cluster, observed and rescaled by the agent."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from daedalus_spark.agent import Agent, AgentConfig, start_agent
from daedalus_spark.agent.driverui import live_executors
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import request, scrape, total, wait_until
from tests.spark.jobs import TOPIC, gen_stop, generate

pytestmark = pytest.mark.spark
QUERY = "wordcount"


@dataclass
class Job:
    spark: SparkSession
    agent: Agent
    query: StreamingQuery
    log: LocalLog


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    root = tmp_path_factory.mktemp("agent")
    log = LocalLog(root / "log")
    log.create_topic(TOPIC, 2)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with LocalCluster(workers=2, memory_per_worker="1g") as cluster:
        spark = cluster.session("daedalus-test-agent")
        agent, query = None, None
        try:
            agent = start_agent(
                spark,
                AgentConfig(port=0, max_executors=2, poll_s=0.5),
                latest_offsets={TOPIC: lambda: log.latest_offsets(TOPIC)},
            )
            frame = wordcount.build(spark, read_values(spark, source="local", topic=TOPIC, path=str(root / "log")))
            query = write_stream(
                frame, sink="memory", name=QUERY, output_mode="update", checkpoint=str(root / "ckpt"), trigger_s=0.5
            ).start()
            yield Job(spark, agent, query, log)
        finally:
            if query is not None:
                query.stop()
            if agent is not None:
                agent.stop()
            spark.stop()


def executors(job: Job) -> int:
    return int(request(f"{job.agent.url}/executors")[1]["current"])


def batch_id(job: Job) -> int:
    progress = job.query.lastProgress
    return -1 if progress is None else int(progress["batchId"])


def set_target(job: Job, target: int) -> float:
    """PUT the target and wait until the live executor count matches; returns the seconds it took."""
    start = time.monotonic()
    code, body = request(f"{job.agent.url}/executors", "PUT", {"target": target})
    assert code == 200, body
    wait_until(lambda: executors(job) == target, f"{target} executors", timeout_s=90)
    return time.monotonic() - start


def lag(job: Job) -> dict[str, tuple[float, float, float]]:
    s = scrape(job.agent.url)
    parts = {ls for (n, ls) in s if n == "daedalus_spark_source_lag_records"}
    return {
        dict(ls)["partition"]: (
            s[("daedalus_spark_source_lag_records", ls)],
            s[("daedalus_spark_source_latest_offset_total", ls)],
            s[("daedalus_spark_source_committed_offset_total", ls)],
        )
        for ls in parts
    }


def expected_counts(log: LocalLog) -> Counter[str]:
    words: Counter[str] = Counter()
    for partition, end in log.latest_offsets(TOPIC).items():
        for _, line in log.read(TOPIC, partition, 0, end):
            words.update(line.split())
    return words


def counted(job: Job) -> dict[str, int]:
    rows = job.spark.table(QUERY).groupBy("word").max("count").collect()
    return {r[0]: int(r[1]) for r in rows}


def drain(job: Job) -> None:
    """Wait until the query has committed everything appended (exported lag 0 and total rows match)."""
    appended = sum(job.log.latest_offsets(TOPIC).values())
    wait_until(
        lambda: (
            total(scrape(job.agent.url), "daedalus_spark_lag_records") == 0
            and total(scrape(job.agent.url), "daedalus_spark_query_input_records_total") == appended
        ),
        "lag 0 after the generator stopped",
        timeout_s=90,
    )


def test_records_and_lag_match_the_query(job: Job) -> None:
    wait_until(lambda: executors(job) >= 1, "an executor", 90)
    set_target(job, 1)
    # The agent stops counting an executor once asked to leave; the driver lists it until it is gone. Load starts
    # after that, so no stage is retried on a lost executor while the records are counted.
    wait_until(lambda: len(live_executors(job.agent.reader.executors())) == 1, "the driver listing 1 executor", 90)
    gen, thread = generate(job.log, seconds=6, rate=400.0, seed=1)
    while thread.is_alive():
        before = job.log.latest_offsets(TOPIC)
        seen = lag(job)
        after = job.log.latest_offsets(TOPIC)
        for partition, (behind, latest, committed) in seen.items():
            assert behind == latest - committed  # lag is appended minus committed offsets
            assert before[int(partition)] <= latest <= after[int(partition)]
        time.sleep(0.3)
    thread.join()
    drain(job)
    ends = [json.loads(src["endOffset"]) for src in job.query.lastProgress["sources"]]
    committed_ends = {p: float(o) for end in ends for p, o in end[TOPIC].items()}
    assert {p: c for p, (_, _, c) in lag(job).items()} == committed_ends
    assert all(b == 0 for b, _, _ in lag(job).values())
    processed = sum(p["numInputRows"] for p in job.query.recentProgress)
    assert processed == gen.keeper.produced

    def executor_records() -> float:
        return total(scrape(job.agent.url), "daedalus_spark_executor_records_processed_total")

    # The stages' records reach the agent a poll after the driver's UI lists them finished: slow on a busy machine.
    try:
        wait_until(lambda: abs(executor_records() - processed) <= 0.02 * processed, "executor records within 2 %", 90)
    except TimeoutError:
        pytest.fail(f"executor records {executor_records():.0f} against {processed} read by the query")
    assert counted(job) == dict(expected_counts(job.log))


def test_target_1_2_1_rescales_live_without_losing_records(job: Job) -> None:
    set_target(job, 1)
    gen, thread = generate(job.log, seconds=30, rate=200.0, seed=2)
    try:
        joined = set_target(job, 2)
        wait_until(lambda: batch_id(job) >= 0, "a first batch", 60)
        batch = batch_id(job)
        left = set_target(job, 1)
        wait_until(lambda: batch_id(job) > batch + 2, "batches after the rescale", 60)
        assert job.query.isActive and job.query.exception() is None
        wait_until(lambda: total(scrape(job.agent.url), "daedalus_spark_executors") == 1, "exported count 1", 10)
        assert executors(job) == 1, request(f"{job.agent.url}/executors")
        assert total(scrape(job.agent.url), "daedalus_spark_executors_target") == 1
        print(f"executor join {joined:.1f} s, leave {left:.1f} s")
    finally:
        gen_stop(thread, gen)
    drain(job)
    assert counted(job) == dict(expected_counts(job.log))


def test_bad_targets_are_rejected_and_change_nothing(job: Job) -> None:
    before = request(f"{job.agent.url}/executors")[1]
    for body in ({"target": -1}, {"target": 1.5}, {"target": "2"}, {"target": 3}, {"target": 0}, {"n": 1}, b"{"):
        code, reply = request(f"{job.agent.url}/executors", "PUT", body)
        assert code == 400 and reply["error"], (body, code, reply)
    assert request(f"{job.agent.url}/executors")[1]["target"] == before["target"]
    assert executors(job) == before["current"]


def test_agent_listens_on_localhost_only(job: Job) -> None:
    assert job.agent.server.server_address[0] == "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # UDP connect sends nothing; picks the route
        try:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if address.startswith("127."):
        pytest.skip("no non-loopback address on this machine")
    with socket.socket() as s:
        s.settimeout(2)
        assert s.connect_ex((address, job.agent.port)) != 0
