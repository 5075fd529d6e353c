"""Spark test on a secured Kafka: the local broker's SASL_SSL listener (PLAIN over TLS, a throwaway certificate made
by keytool), one `KafkaSecurity` for every client. The generator produces over it, Spark's Kafka source reads over
it, the committer commits the group's offsets over it and the agent's offset reader (lag and workload) reads the
log-end offsets over it. The broker's own PLAINTEXT admin is the oracle: every record produced is read exactly once
and committed, and the agent's offsets are the broker's."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark")

from daedalus_spark import metricnames as names
from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.agent.offset_commit import commit_offsets
from daedalus_spark.kafkacluster.broker import LocalKafka, throwaway_tls
from daedalus_spark.kafkacluster.jars import spark_jars_conf
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.kafkacluster.security import KafkaSecurity
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import scrape, stop_leftover_spark_session, total, wait_until

pytestmark = pytest.mark.spark
TOPIC, GROUP, QUERY = "secured-words", "daedalus-secured", "wordcount_secured"
WEIGHTS = [3.0, 1.0]
RATE_PER_S, SECONDS = 300.0, 40


@pytest.fixture
def secured_kafka(tmp_path: Path) -> Iterator[tuple[LocalKafka, KafkaSecurity]]:
    tls = throwaway_tls(tmp_path / "tls")
    with LocalKafka(tls=tls, sasl_users={"spark": "pw-for-spark"}) as kafka:
        settings = KafkaSecurity(
            "SASL_SSL", str(tls.ca_file), sasl_mechanism="PLAIN", sasl_username="spark", sasl_password="pw-for-spark"
        )
        yield kafka, settings


def test_spark_the_committer_and_the_agent_read_a_sasl_ssl_listener_and_every_record_counts_once(
    secured_kafka: tuple[LocalKafka, KafkaSecurity], tmp_path: Path
) -> None:
    kafka, settings = secured_kafka
    kafka.create_topic(TOPIC, len(WEIGHTS))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    stop_leftover_spark_session()
    sink = KafkaSink(kafka.sasl_bootstrap, TOPIC, len(WEIGHTS), config=settings.librdkafka())
    generator = Generator(
        PaceKeeper(Pacer(np.full(SECONDS, RATE_PER_S))), sink, wordcount_line, TOPIC, tick_s=0.1, weights=WEIGHTS
    )
    producing = threading.Thread(target=generator.run, kwargs={"report": lambda _: None}, daemon=True)
    plain = BrokerOffsets(kafka.bootstrap)  # the oracle, on the PLAINTEXT listener
    offsets = BrokerOffsets(kafka.sasl_bootstrap, settings.kafka_python())
    producing.start()
    try:
        with LocalCluster(workers=1, memory_per_worker="1g") as cluster:
            spark = cluster.session("daedalus-test-kafka-sasl", **spark_jars_conf(), **{"spark.ui.enabled": "true"})
            agent = commits = query = None
            try:
                live = {TOPIC: lambda: offsets.latest_offsets(TOPIC)}
                agent = start_agent(spark, AgentConfig(port=0, max_executors=1, poll_s=1.0), latest_offsets=live)
                commits = commit_offsets(
                    spark, GROUP, kafka.sasl_bootstrap, query_name=QUERY, client_config=settings.kafka_python()
                )
                values = read_values(
                    spark,
                    source="kafka",
                    topic=TOPIC,
                    bootstrap=kafka.sasl_bootstrap,
                    options=settings.spark_options(),
                )
                query = write_stream(
                    wordcount.build(spark, values),
                    sink="noop",
                    name=QUERY,
                    output_mode="update",
                    checkpoint=str(tmp_path / "ckpt"),
                    trigger_s=1,
                ).start()
                agent_url = agent.url

                def agent_sees_the_brokers_end_offsets() -> bool:
                    ends = sum(plain.latest_offsets(TOPIC).values())
                    seen = total(scrape(agent_url), names.total(names.SOURCE_LATEST_OFFSET))
                    return ends > 0 and abs(seen - ends) <= RATE_PER_S * 3  # a poll (1 s) and a scrape apart

                wait_until(agent_sees_the_brokers_end_offsets, "the agent's end offsets (over SASL_SSL)", 240, 1.0)
                producing.join(timeout=SECONDS * 4)
                assert not producing.is_alive(), "the generator did not finish its trace"
                produced = generator.keeper.produced
                assert sum(plain.latest_offsets(TOPIC).values()) == produced

                def all_committed() -> bool:
                    return plain.committed(TOPIC, GROUP) == plain.latest_offsets(TOPIC) and query.exception() is None

                wait_until(all_committed, "every record produced committed for the group (over SASL_SSL)", 240, 1.0)

                def read() -> float:
                    return total(scrape(agent_url), names.total(names.QUERY_INPUT_RECORDS), query=QUERY)

                # the agent counts a batch's input when its progress event reaches it, which may follow the commit
                wait_until(lambda: read() >= produced, "the agent's count of the records read to reach the end", 60)
                assert read() == produced  # none lost, none twice
                assert offsets.lag(TOPIC, GROUP) == dict.fromkeys(range(len(WEIGHTS)), 0)
                wait_until(
                    lambda: total(scrape(agent_url), names.LAG_RECORDS) == 0, "the agent's lag at 0, all read", 60
                )
            finally:
                if query is not None:
                    query.stop()
                if commits is not None:
                    commits.stop()
                if agent is not None:
                    agent.stop()
                spark.stop()
    finally:
        generator.keeper.pacer = Pacer(np.zeros(0))
        producing.join(timeout=30)
        offsets.close()
        plain.close()
