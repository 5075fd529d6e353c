"""The committing listener without Spark: which sources and offsets it commits, repeats and steps back left out,
failures counted and never raised; and kafka-python's own consumer against an address where no broker listens."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("kafka")

from kafka.errors import KafkaError

from daedalus_spark.agent.offset_commit import (
    KafkaCommitter,
    OffsetCommitListener,
    Partition,
    end_offsets,
    forward,
    is_kafka_source,
)

KAFKA = "KafkaV2[Subscribe[orders]]"
LOCAL = "daedalus_log"


def source(description: str, end: Any) -> SimpleNamespace:
    return SimpleNamespace(description=description, endOffset=end)


def progress(*sources: SimpleNamespace, name: str = "q") -> SimpleNamespace:
    return SimpleNamespace(name=name, sources=list(sources))


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        pytest.param([source(KAFKA, {"orders": {"0": 5, "1": 7}})], {("orders", 0): 5, ("orders", 1): 7}, id="dict"),
        pytest.param([source(KAFKA, '{"orders": {"0": 5}}')], {("orders", 0): 5}, id="json-as-spark-reports-it"),
        pytest.param([source("KafkaSource[Assign[orders-0]]", '{"orders": {"0": 3}}')], {("orders", 0): 3}, id="v1"),
        pytest.param([source(LOCAL, {"orders": {"0": 5}})], {}, id="not-kafka-left-out"),
        pytest.param([source(KAFKA, '{"orders": {"0": 5')], {}, id="bad-json"),
        pytest.param([source(KAFKA, None)], {}, id="no-end-offset"),
        pytest.param([source(KAFKA, {"orders": {"x": 5, "1": 2}})], {("orders", 1): 2}, id="bad-partition-skipped"),
        pytest.param([source(KAFKA, {"orders": {"0": -1, "1": "2"}})], {}, id="negative-or-string-offset"),
        pytest.param(
            [source(KAFKA, {"a": {"0": 1}}), source(LOCAL, {"b": {"0": 2}}), source(KAFKA, {"c": {"0": 3}})],
            {("a", 0): 1, ("c", 0): 3},
            id="two-kafka-sources-one-local",
        ),
    ],
)
def test_end_offsets_of_kafka_sources(sources: list[SimpleNamespace], expected: dict[Partition, int]) -> None:
    assert end_offsets(sources) == expected


def test_a_source_filter_admits_other_sources() -> None:
    assert end_offsets([source(LOCAL, {"t": {"0": 4}})], lambda d: d == LOCAL) == {("t", 0): 4}
    assert not is_kafka_source(LOCAL) and is_kafka_source(KAFKA)


@pytest.mark.parametrize(
    ("committed", "offsets", "expected"),
    [
        pytest.param({}, {("t", 0): 0}, {("t", 0): 0}, id="first-commit-even-at-0"),
        pytest.param({("t", 0): 5}, {("t", 0): 5}, {}, id="repeat"),
        pytest.param({("t", 0): 5}, {("t", 0): 3}, {}, id="backwards"),
        pytest.param({("t", 0): 5, ("t", 1): 5}, {("t", 0): 6, ("t", 1): 4}, {("t", 0): 6}, id="one-forward-one-back"),
        pytest.param({("t", 0): 5}, {("t", 0): 5, ("t", 1): 1}, {("t", 1): 1}, id="new-partition"),
    ],
)
def test_forward(
    committed: dict[Partition, int], offsets: dict[Partition, int], expected: dict[Partition, int]
) -> None:
    assert forward(committed, offsets) == expected


class Recorder:
    """A committer that records what it is asked to commit, failing the calls it is told to fail."""

    def __init__(self, fail: int = 0) -> None:
        self.calls: list[dict[Partition, int]] = []
        self.fail = fail

    def __call__(self, offsets: Mapping[Partition, int]) -> None:
        self.calls.append(dict(offsets))
        if self.fail:
            self.fail -= 1
            raise OSError("broker down")


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def listener(recorder: Recorder) -> Iterator[OffsetCommitListener]:
    made = OffsetCommitListener(recorder)
    yield made
    made.stop()


def feed(listener: OffsetCommitListener, *events: SimpleNamespace) -> None:
    for event in events:
        listener.onQueryProgress(SimpleNamespace(progress=event))
        assert listener.wait_idle(10.0)


def test_commits_each_batch_skips_repeats_and_steps_back(listener: OffsetCommitListener, recorder: Recorder) -> None:
    feed(
        listener,
        progress(source(KAFKA, {"o": {"0": 5, "1": 5}})),
        progress(source(KAFKA, {"o": {"0": 5, "1": 5}})),  # a repeat: nothing to commit
        progress(source(KAFKA, {"o": {"0": 4, "1": 9}})),  # partition 0 back: only partition 1
        progress(source(LOCAL, {"o": {"0": 99}})),  # not Kafka
    )
    assert recorder.calls == [{("o", 0): 5, ("o", 1): 5}, {("o", 1): 9}]
    assert listener.committed == {("o", 0): 5, ("o", 1): 9}
    assert (listener.commits, listener.failures) == (2, 0)


def test_a_failed_commit_is_counted_and_retried_by_the_next_batch(listener: OffsetCommitListener) -> None:
    listener.committer = Recorder(fail=1)
    feed(listener, progress(source(KAFKA, {"o": {"0": 5}})))
    assert (listener.commits, listener.failures, listener.committed) == (0, 1, {})
    feed(listener, progress(source(KAFKA, {"o": {"0": 5}})))  # same offsets again: now they go through
    assert (listener.commits, listener.failures, listener.committed) == (1, 1, {("o", 0): 5})


def test_an_unreadable_event_never_raises_into_spark(listener: OffsetCommitListener) -> None:
    listener.onQueryProgress(SimpleNamespace(progress=None))
    assert listener.failures == 1


def test_only_the_named_query(recorder: Recorder) -> None:
    listener = OffsetCommitListener(recorder, query_name="orders")
    try:
        feed(listener, progress(source(KAFKA, {"o": {"0": 1}}), name="other"))
        feed(listener, progress(source(KAFKA, {"o": {"0": 2}}), name="orders"))
    finally:
        listener.stop()
    assert recorder.calls == [{("o", 0): 2}]


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_kafka_committer_without_a_broker_fails_bounded_and_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python's own consumer and commit, up to the network: nothing listens, so finding the group coordinator
    times out after `timeout_ms`; the listener logs and counts it and keeps going."""
    committer = KafkaCommitter("orders-committer", f"127.0.0.1:{unused_port()}", timeout_ms=1000)
    try:
        with pytest.raises(KafkaError):
            committer({("orders", 0): 5})
        listener = OffsetCommitListener(committer)
        try:
            feed(listener, progress(source(KAFKA, {"orders": {"0": 5}})))
            assert (listener.commits, listener.failures, listener.committed) == (0, 1, {})
        finally:
            listener.stop()
    finally:
        committer.close()
    logged = [r.getMessage() for r in caplog.records if r.name == "daedalus_spark.agent.offset_commit"]
    assert len(logged) == 1 and logged[0].startswith("offset commit of 1 partition(s) failed: KafkaTimeoutError"), (
        logged
    )


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        pytest.param({"group_id": " "}, "group_id is empty", id="empty-group"),
        pytest.param({"timeout_ms": 500}, "timeout_ms 500", id="timeout-not-above-fetch-wait"),
        pytest.param({"timeout_ms": 10**9}, "timeout_ms 1000000000", id="timeout-too-long"),
    ],
)
def test_committer_settings_that_cannot_work_are_refused_naming_them(settings, words):
    kwargs = {"group_id": "orders-committer", "bootstrap_servers": "127.0.0.1:1"} | settings
    with pytest.raises(ValueError, match=words):
        KafkaCommitter(**kwargs)
