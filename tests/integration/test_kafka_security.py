"""Integration: the project's Kafka clients over a secured broker — the local broker's SSL listener and its SASL_SSL
(PLAIN) one, with a throwaway certificate made by keytool. The generator (librdkafka), the offset reader, the
committer and the exporter (kafka-python) connect with one `KafkaSecurity` each, and see what the broker's own
PLAINTEXT admin sees; a client that does not trust the certificate, or gives a wrong password, is refused."""

from __future__ import annotations

import dataclasses
import urllib.request
from collections.abc import Iterator

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark.agent.offset_commit import KafkaCommitter
from daedalus_spark.kafkacluster import exporter
from daedalus_spark.kafkacluster.broker import BrokerTls, LocalKafka, throwaway_tls
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.kafkacluster.security import KafkaSecurity
from daedalus_spark.waiting import wait_until
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line

USER, PASSWORD = "daedalus", "s3cret-pw"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> BrokerTls:
    return throwaway_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def kafka(tls: BrokerTls) -> Iterator[LocalKafka]:
    with LocalKafka(tls=tls, sasl_users={USER: PASSWORD, "other": "x"}) as broker:
        yield broker


def secured(kafka: LocalKafka, tls: BrokerTls, protocol: str) -> tuple[str, KafkaSecurity]:
    if protocol == "SSL":
        return kafka.ssl_bootstrap, KafkaSecurity("SSL", str(tls.ca_file))
    sasl = KafkaSecurity(
        "SASL_SSL", str(tls.ca_file), sasl_mechanism="PLAIN", sasl_username=USER, sasl_password=PASSWORD
    )
    return kafka.sasl_bootstrap, sasl


def exported(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        families = text_string_to_metric_families(r.read().decode())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def _commits(committer: KafkaCommitter, offsets: dict[tuple[str, int], int]) -> bool:
    try:
        committer(offsets)  # the group coordinator is elected on first use: a first attempt may find none
        return True
    except Exception:
        return False


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"], ids=["tls", "sasl-over-tls"])
def test_generator_reader_committer_and_exporter_work_over_the_secured_listener(
    kafka: LocalKafka, tls: BrokerTls, protocol: str
) -> None:
    topic, group = f"secured-{protocol.lower()}", f"g-{protocol.lower()}"
    kafka.create_topic(topic, 3)
    bootstrap, settings = secured(kafka, tls, protocol)
    sink = KafkaSink(bootstrap, topic, 3, config=settings.librdkafka())
    generator = Generator(PaceKeeper(Pacer(np.array([3000.0]))), sink, wordcount_line, topic, weights=[2, 1, 0])
    assert generator.step(10.0) == 3000
    sink.flush()
    plain = BrokerOffsets(kafka.bootstrap)  # the broker's own answer, over PLAINTEXT
    offsets = BrokerOffsets(bootstrap, settings.kafka_python())
    committer = KafkaCommitter(group, bootstrap, config=settings.kafka_python())
    server = exporter.serve(bootstrap, [topic], [group], 0, client_config=settings.kafka_python())
    try:
        assert plain.latest_offsets(topic) == {0: 2000, 1: 1000, 2: 0}
        assert offsets.latest_offsets(topic) == plain.latest_offsets(topic)
        wait_until(lambda: _commits(committer, {(topic, 0): 1500, (topic, 1): 1000}), "a commit over " + protocol, 60)
        assert plain.committed(topic, group) == offsets.committed(topic, group) == {0: 1500, 1: 1000}
        assert offsets.lag(topic, group) == {0: 500, 1: 0, 2: 0}
        series = exported(server.server_port)
        for partition, lag in plain.lag(topic, group).items():
            key = (("consumergroup", group), ("partition", str(partition)), ("topic", topic))
            assert series[("kafka_consumergroup_lag", key)] == lag
    finally:
        server.shutdown()
        server.server_close()
        committer.close()
        offsets.close()
        plain.close()


@pytest.mark.parametrize(
    ("case", "protocol", "change"),
    [
        ("certificate-not-trusted", "SSL", {"ca_file": ""}),  # the system's CAs do not sign the throwaway one
        ("wrong-password", "SASL_SSL", {"sasl_password": "wrong"}),
        ("plaintext-to-tls-port", "SSL", {"protocol": "PLAINTEXT", "ca_file": ""}),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_client_the_broker_must_refuse_reads_nothing(
    kafka: LocalKafka, tls: BrokerTls, case: str, protocol: str, change: dict[str, str]
) -> None:
    kafka.create_topic(f"refused-{case}", 1)
    bootstrap, settings = secured(kafka, tls, protocol)
    wrong = dataclasses.replace(settings, **change)
    offsets = BrokerOffsets(bootstrap, {**wrong.kafka_python(), "bootstrap_timeout_ms": 5000}, timeout_ms=3000)
    try:
        with pytest.raises(Exception) as refused:
            offsets.latest_offsets(f"refused-{case}")
        # kafka-python retries a refused handshake until its bootstrap deadline, then gives up
        assert type(refused.value).__name__ == "KafkaTimeoutError", refused.value
        assert f"Unable to bootstrap from {bootstrap}" in str(refused.value)
    finally:
        offsets.close()
