"""Integration: the local Kafka broker (KRaft) the project starts — it stops whatever happens, says what is
missing — and the offsets, lag and kafka-exporter series read from it, against the broker's own answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark.agent.offset_commit import KafkaCommitter
from daedalus_spark.agent.queries import BoundedOffsets, OffsetsUnavailable
from daedalus_spark.buildcache import JarsMissing
from daedalus_spark.kafkacluster import exporter
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.jars import FETCH_COMMAND, artifact_name
from daedalus_spark.kafkacluster.offsets import BrokerOffsets, TopicMissing
from daedalus_spark.waiting import wait_until
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from tests.conftest import alive

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kafka() -> Iterator[LocalKafka]:
    with LocalKafka() as broker:
        yield broker


OWNER = textwrap.dedent(
    """
    import signal, sys, time
    from daedalus_spark.kafkacluster.broker import LocalKafka
    # Ctrl-C as in a terminal, even when this test runs in a background job (which starts with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    kafka = LocalKafka().start()
    print(kafka.pid, kafka.log_path.parent, flush=True)
    if sys.argv[1] == "raise":
        raise RuntimeError("the owner fails, never calling stop(): the exit hook stops the broker")
    try:
        time.sleep(600)
    finally:
        kafka.stop()
    """
)


@pytest.mark.parametrize("ending", ["raise", "ctrl-c"], ids=["owner-fails", "owner-interrupted"])
def test_the_broker_leaves_no_process_and_no_folder_behind(ending: str, tmp_path: Path) -> None:
    # The broker's stop waits up to 30 s for SIGTERM and 10 s for SIGKILL; on a loaded machine the owner's own start
    # and exit add to that, so the owner is given 180 s, and what it printed is shown when it overruns.
    log = tmp_path / "owner.log"
    with log.open("w") as err:
        owner = subprocess.Popen(
            [sys.executable, "-c", OWNER, ending], stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT
        )
    pid = None
    try:
        assert owner.stdout is not None
        pid_text, folder = owner.stdout.readline().split()
        pid = int(pid_text)
        assert alive(pid) and Path(folder).is_dir()
        if ending == "ctrl-c":
            owner.send_signal(signal.SIGINT)
        try:
            owner.wait(timeout=180)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the owner did not exit within 180 s; it printed:\n{log.read_text()[-3000:]}")
        wait_until(lambda: not alive(pid), f"the broker (pid {pid}) to be gone", 60)
        assert not Path(folder).exists()
    finally:
        owner.kill()
        owner.wait()
        if pid is not None and alive(pid):  # the owner failed to stop it: stop it here, and fail above
            os.kill(pid, signal.SIGKILL)


def test_missing_jars_and_java_name_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAEDALUS_SPARK_CACHE", str(tmp_path))
    with pytest.raises(JarsMissing, match=rf"{FETCH_COMMAND}.*first") as missing:
        LocalKafka().start()
    assert str(tmp_path) in str(missing.value)
    monkeypatch.delenv("DAEDALUS_SPARK_CACHE")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(JarsMissing, match=r"java not found.*Java 17"):
        LocalKafka().start()


@pytest.mark.parametrize(
    ("jar", "artifact"),
    [
        ("kafka-clients-3.9.2.jar", "kafka-clients"),
        ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("zstd-jni-1.5.6-10.jar", "zstd-jni"),
        ("scala-library-2.13.16.jar", "scala-library"),
        ("commons-pool2-2.13.1.jar", "commons-pool2"),
    ],
)
def test_a_jars_artifact_is_its_name_without_the_version(jar: str, artifact: str) -> None:
    assert artifact_name(jar) == artifact


def produce(kafka: LocalKafka, topic: str, weights: list[float], records: int) -> None:
    sink = KafkaSink(kafka.bootstrap, topic, len(weights))
    generator = Generator(PaceKeeper(Pacer(np.array([float(records)]))), sink, wordcount_line, topic, weights=weights)
    assert generator.step(10.0) == records
    sink.flush()


def exported(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        families = text_string_to_metric_families(r.read().decode())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_skewed_production_lands_on_the_partitions_the_weights_ask(kafka: LocalKafka) -> None:
    kafka.create_topic("skewed", 4)
    produce(kafka, "skewed", [4, 2, 1, 1], 8000)
    offsets = BrokerOffsets(kafka.bootstrap)
    try:
        assert offsets.latest_offsets("skewed") == {0: 4000, 1: 2000, 2: 1000, 3: 1000}
    finally:
        offsets.close()


def test_lag_and_the_exported_series_equal_the_brokers_offsets_partition_by_partition(kafka: LocalKafka) -> None:
    kafka.create_topic("lagged", 3)
    produce(kafka, "lagged", [1, 1, 1], 3000)
    committer = KafkaCommitter("g1", kafka.bootstrap)
    offsets = BrokerOffsets(kafka.bootstrap)
    server = exporter.serve(kafka.bootstrap, ["lagged"], ["g1", "never-committed"], 0)
    try:
        wait_until(lambda: _commits(committer, {("lagged", 0): 700, ("lagged", 1): 1000}), "a first commit", 60)
        assert offsets.committed("lagged", "g1") == {0: 700, 1: 1000}  # partition 2: never committed
        # unknown is never 0: the uncommitted partition counts from its log start
        assert offsets.lag("lagged", "g1") == {0: 300, 1: 0, 2: 1000}
        assert offsets.lag("lagged", "never-committed") == {0: 1000, 1: 1000, 2: 1000}
        series = exported(server.server_port)
        for partition, lag in offsets.lag("lagged", "g1").items():
            key = (("consumergroup", "g1"), ("partition", str(partition)), ("topic", "lagged"))
            assert series[("kafka_consumergroup_lag", key)] == lag
        for partition, end in offsets.latest_offsets("lagged").items():
            labels = (("partition", str(partition)), ("topic", "lagged"))
            assert series[("kafka_topic_partition_current_offset", labels)] == end
        committed = {k: v for k, v in series.items() if k[0] == "kafka_consumergroup_current_offset"}
        assert sorted(dict(k[1])["partition"] for k in committed if dict(k[1])["consumergroup"] == "g1") == ["0", "1"]
    finally:
        server.shutdown()
        server.server_close()
        committer.close()
        offsets.close()


def _commits(committer: KafkaCommitter, offsets: dict[tuple[str, int], int]) -> bool:
    try:
        committer(offsets)  # the group coordinator is elected on first use: a first attempt may find none
        return True
    except Exception:
        return False


def test_a_raised_partition_count_shows_at_once_and_a_deleted_topic_is_a_clear_error(kafka: LocalKafka) -> None:
    kafka.create_topic("growing", 2)
    offsets = BrokerOffsets(kafka.bootstrap)
    server = exporter.serve(kafka.bootstrap, ["growing"], ["g3"], 0)

    def exported_partitions() -> set[str]:
        series = exported(server.server_port)
        return {dict(k[1])["partition"] for k in series if k[0] == "kafka_topic_partition_current_offset"}

    try:
        assert offsets.partitions("growing") == [0, 1]
        assert exported_partitions() == {"0", "1"}
        kafka.add_partitions("growing", 5)
        assert offsets.partitions("growing") == [0, 1, 2, 3, 4]
        assert set(offsets.latest_offsets("growing")) == {0, 1, 2, 3, 4}
        assert exported_partitions() == {"0", "1", "2", "3", "4"}  # the native partitions query sees all five
        kafka.delete_topic("growing")
        wait_until(lambda: _missing(offsets, "growing"), "the deleted topic to be gone from the metadata", 60)
        with pytest.raises(TopicMissing, match=f"'growing' not found on {kafka.bootstrap}"):
            offsets.latest_offsets("growing")
        assert exported_partitions() == set()  # gone: no series, never zeros
    finally:
        server.shutdown()
        server.server_close()
        offsets.close()


def _missing(offsets: BrokerOffsets, topic: str) -> bool:
    try:
        offsets.partitions(topic)
    except TopicMissing:
        return True
    return False


def test_a_broker_restart_loses_no_record_and_the_reader_reconnects(kafka: LocalKafka) -> None:
    kafka.create_topic("durable", 2)
    produce(kafka, "durable", [1, 1], 2000)
    offsets = BrokerOffsets(kafka.bootstrap, timeout_ms=3000)
    server = exporter.serve(kafka.bootstrap, ["durable"], ["g2"], 0)
    try:
        before = offsets.latest_offsets("durable")
        kafka.restart(down_s=0.0)
        wait_until(lambda: _reads(offsets, "durable") == before, "the same end offsets after the restart", 90)
        wait_until(
            lambda: (
                ("kafka_topic_partition_current_offset", (("partition", "0"), ("topic", "durable")))
                in exported(server.server_port)
            ),
            "the exporter to serve the topic again",
            90,
        )
    finally:
        server.shutdown()
        server.server_close()
        offsets.close()


def _reads(offsets: BrokerOffsets, topic: str) -> dict[int, int] | None:
    try:
        return offsets.latest_offsets(topic)
    except Exception:
        return None


def test_while_the_broker_is_down_the_agents_live_reader_answers_within_its_bound(kafka: LocalKafka) -> None:
    """What keeps the agent's /metrics answering through a broker outage: each read of the end offsets holds its
    caller at most `wait_s`, fails saying why, and reads the broker's offsets again once it is back."""
    kafka.create_topic("outage", 2)
    produce(kafka, "outage", [1, 1], 1000)
    offsets = BrokerOffsets(kafka.bootstrap, timeout_ms=2000)
    bounded = BoundedOffsets(lambda: offsets.latest_offsets("outage"), "end offsets of topic 'outage'", wait_s=1.5)
    held: list[float] = []

    def while_down(_: float) -> None:
        for _ in range(4):
            t0 = time.monotonic()
            with pytest.raises(OffsetsUnavailable, match=r"end offsets of topic 'outage' (not read within|unreadable)"):
                bounded()
            held.append(time.monotonic() - t0)

    try:
        assert bounded() == {0: 500, 1: 500}
        kafka.restart(down_s=0.0, sleep=while_down)
        assert max(held) < 5.0, held  # 1.5 s and a busy machine's slack; never kafka-python's 30-s bootstrap
        wait_until(lambda: _bounded_reads(bounded) == {0: 500, 1: 500}, "the offsets read again after the restart", 90)
    finally:
        offsets.close()


def _bounded_reads(bounded: BoundedOffsets) -> dict[int, int] | None:
    try:
        return dict(bounded())
    except OffsetsUnavailable:
        return None
