"""Spark test of Kafka faults on a real broker, seen the way the controller sees them (the agent's /metrics through
the scrape monitor, then the capacity model):
- the topic's partition count raised mid-run: Spark reads the new partitions, the monitor reports them, and the
  capacity table's busiest-executor shares (which bound the partition-bound scale-outs) follow the new count;
- the topic deleted mid-run: the agent leaves the lag out and says why (the broker's own words), the monitor
  refuses the window, never a lag of 0.

A 1-executor standalone cluster, WordCount on Spark's Kafka source, the agent with the broker's live end offsets.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")

from daedalus_spark import metricnames as names
from daedalus_spark.agent import Agent, AgentConfig, start_agent
from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.analyze.partitions import busiest_shares, even_weights
from daedalus_spark.clock import SystemClock
from daedalus_spark.config import CapacityConfig, MonitorConfig
from daedalus_spark.domain import Observation
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.jars import spark_jars_conf
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.scrape import ScrapeMonitor
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import scrape, stop_leftover_spark_session, total, wait_until

pytestmark = pytest.mark.spark
TOPIC, QUERY = "faults", "wordcount_faults"
RATE_PER_S = 300.0  # per generator
MAX_SCALEOUT = 4


@dataclass
class FaultJob:
    kafka: LocalKafka
    offsets: BrokerOffsets
    agent: Agent
    monitor: ScrapeMonitor
    query: Any
    generators: list[Generator]

    def produce(self, partitions: int, weights: list[float]) -> None:
        sink = KafkaSink(self.kafka.bootstrap, TOPIC, partitions)
        generator = Generator(
            PaceKeeper(Pacer(np.full(900, RATE_PER_S))), sink, wordcount_line, TOPIC, tick_s=0.1, weights=weights
        )
        threading.Thread(target=generator.run, kwargs={"report": lambda _: None}, daemon=True).start()
        self.generators.append(generator)

    def observe(self) -> Observation | None:
        end = time.time() - 1
        try:
            return self.monitor.observe(start_s=end - 12, end_s=end)
        except MonitorError:
            return None


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultJob]:
    root = tmp_path_factory.mktemp("kafka-faults")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    stop_leftover_spark_session()
    generators: list[Generator] = []
    with LocalKafka() as kafka, LocalCluster(workers=1, memory_per_worker="1g") as cluster:
        kafka.create_topic(TOPIC, 2)
        offsets = BrokerOffsets(kafka.bootstrap, timeout_ms=3000)
        spark = cluster.session("daedalus-test-kafka-faults", **spark_jars_conf(), **{"spark.ui.enabled": "true"})
        agent = query = monitor = None
        try:
            live = {TOPIC: lambda: offsets.latest_offsets(TOPIC)}
            agent = start_agent(spark, AgentConfig(port=0, max_executors=1, poll_s=1.0), latest_offsets=live)
            config = MonitorConfig(scrape_urls=[f"{agent.url}/metrics"], step_s=1, rate_window_s=4, timeout_s=5)
            monitor = ScrapeMonitor(config, "busy_time", SystemClock(), horizon_s=120)
            monitor.start()
            values = read_values(spark, source="kafka", topic=TOPIC, bootstrap=kafka.bootstrap)
            query = write_stream(
                wordcount.build(spark, values),
                sink="noop",
                name=QUERY,
                output_mode="update",
                checkpoint=str(root / "ckpt"),
                trigger_s=1,
            ).start()
            job = FaultJob(kafka, offsets, agent, monitor, query, generators)
            job.produce(2, [1.0, 1.0])
            yield job
        finally:
            for generator in generators:
                generator.keeper.pacer = Pacer(np.zeros(0))  # nothing more is due: run() ends at its next tick
            if query is not None:
                query.stop()
            if monitor is not None:
                monitor.close()
            if agent is not None:
                agent.stop()
            spark.stop()
            offsets.close()


def shares_at(model: CapacityModel) -> list[float]:
    return busiest_shares(model.partition_shares, range(1, MAX_SCALEOUT + 1), "kafka")


def window_of(job: FaultJob, count: int, what: str) -> Observation:
    """The first window whose partition rates cover `count` partitions, each of them read; waits up to 240 s."""
    found: list[Observation] = []

    def covered() -> bool:
        obs = job.observe()
        if obs is None or len(obs.partitions) != count or min(p.records_per_s for p in obs.partitions) <= 0:
            return False
        found.append(obs)
        return True

    wait_until(covered, what, 240, 1.0)
    return found[-1]


def test_a_raised_partition_count_is_read_and_the_partition_bound_scaleouts_follow(job: FaultJob) -> None:
    model = CapacityModel(CapacityConfig(partitions=2, partition_assignment="kafka"))
    model.learn(window_of(job, 2, "a window in which the monitor reports the 2 partitions, each read"))
    two = busiest_shares(even_weights(2, TOPIC), range(1, MAX_SCALEOUT + 1), "kafka")
    assert shares_at(model) == pytest.approx(two, abs=0.08)
    assert shares_at(model)[3] >= 0.42  # two partitions: at most two executors busy, the fourth adds nothing

    job.kafka.add_partitions(TOPIC, 4)
    job.produce(4, [0.0, 0.0, 1.0, 1.0])  # a producer writing the new partitions: 4 equal ones in all
    obs = window_of(job, 4, "a window in which the monitor reports the 4 partitions, each read by Spark")
    assert job.offsets.partitions(TOPIC) == [0, 1, 2, 3]
    model.learn(obs)
    assert sorted(model.partition_shares) == [(TOPIC, p) for p in range(4)]
    four = busiest_shares(even_weights(4, TOPIC), range(1, MAX_SCALEOUT + 1), "kafka")
    assert shares_at(model) == pytest.approx(four, abs=0.1)
    assert shares_at(model)[3] < shares_at(model)[1] - 0.1  # the fourth executor now takes load off the busiest


def test_a_deleted_topic_leaves_the_lag_unknown_and_says_why(job: FaultJob) -> None:
    """Last in this module: it ends the topic."""
    wait_until(lambda: job.observe() is not None, "a window with the lag", 240, 1.0)
    for generator in job.generators:
        generator.keeper.pacer = Pacer(np.zeros(0))
    job.kafka.delete_topic(TOPIC)

    def lag_left_out() -> bool:
        samples = scrape(job.agent.url)
        return not [v for (name, _), v in samples.items() if name == names.LAG_RECORDS]

    wait_until(lag_left_out, "the agent's lag left out once the topic is gone", 120, 1.0)
    failures = total(scrape(job.agent.url), names.total(names.SOURCE_OFFSETS_FAILURES), topic=TOPIC)
    assert failures > 0
    reader = job.agent.collector.latest[TOPIC]
    assert f"Kafka topic '{TOPIC}' not found on {job.kafka.bootstrap}" in getattr(reader, "last_error", "")
    refusal: list[str] = []

    def refused() -> bool:
        try:
            job.monitor.observe(start_s=time.time() - 11, end_s=time.time() - 1)
        except MonitorError as exc:
            refusal.append(str(exc))
            return True
        return False

    wait_until(refused, "the monitor refusing a window without lag", 60, 1.0)
    assert "lag" in refusal[-1], refusal[-1]
