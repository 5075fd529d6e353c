"""Execute (driver side): commits each Kafka source's batch end offsets for a consumer group, so Kafka's own
consumer-group lag (kafka-exporter's `kafka_consumergroup_lag`) exists for a Spark query, which commits none.

Committing happens on one background thread, never on Spark's listener thread: the listener merges each progress
event's end offsets into a single pending map (per partition the highest; a later batch supersedes an earlier one,
so the bounded "queue" keeps only the newest offsets) and returns at once. A commit that fails (broker down, timeout)
is logged and counted; the next progress event's end offsets, which cover every partition of the source, retry it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener

from daedalus_spark.agent.queries import flatten_offsets

_log = logging.getLogger(__name__)

Partition = tuple[str, int]  # (topic, partition)
Committer = Callable[[Mapping[Partition, int]], None]  # commits {(topic, partition): next offset to read}
SourceFilter = Callable[[str], bool]  # a source's description -> commit its offsets?


def is_kafka_source(description: str) -> bool:
    """Spark's Kafka sources describe themselves as `KafkaV2[Subscribe[orders]]` (micro-batch) or `KafkaSource[…]`."""
    return description.startswith(("KafkaV2[", "KafkaSource["))


def end_offsets(sources: Iterable[Any], commit_source: SourceFilter = is_kafka_source) -> dict[Partition, int]:
    """The batch end offsets of the sources `commit_source` accepts; unreadable offsets and partitions are left out."""
    out: dict[Partition, int] = {}
    for source in sources:
        if not commit_source(str(getattr(source, "description", "") or "")):
            continue
        for (topic, partition), offset in flatten_offsets(getattr(source, "endOffset", None)).items():
            if partition.isdigit() and offset >= 0:
                out[(topic, int(partition))] = offset
    return out


def forward(committed: Mapping[Partition, int], offsets: Mapping[Partition, int]) -> dict[Partition, int]:
    """The offsets that move a partition past what is committed: a repeat or a step back is not committed."""
    return {key: offset for key, offset in offsets.items() if offset > committed.get(key, -1)}


@dataclass(eq=False)  # hashable: the listener bus keeps it in a set
class OffsetCommitListener(StreamingQueryListener):
    """On every query progress, hands the accepted sources' end offsets to `committer` on a background thread."""

    committer: Committer
    commit_source: SourceFilter = is_kafka_source
    query_name: str | None = None  # only this query's progress; None: every query of the session
    committed: dict[Partition, int] = field(default_factory=dict)  # what the committer accepted
    commits: int = 0
    failures: int = 0
    _pending: dict[Partition, int] = field(default_factory=dict)
    _busy: bool = False
    _stopped: bool = False
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="daedalus-offset-commit", daemon=True)
        self._thread.start()

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark calls it by this name
        return None

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802 - Spark calls it by this name
        return None

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802 - Spark calls it by this name
        return None

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802 - Spark calls it by this name
        try:
            self.offer(event.progress)
        except Exception:  # noqa: BLE001 - never into Spark's listener bus
            _log.exception("offset commit: could not read a progress event")
            with self._changed:
                self.failures += 1

    def offer(self, progress: Any) -> None:
        """Merge this progress's end offsets into the pending commit (per partition the highest) and wake the thread."""
        if self.query_name is not None and progress.name != self.query_name:
            return
        offsets = end_offsets(progress.sources, self.commit_source)
        with self._changed:
            for key, offset in offsets.items():
                self._pending[key] = max(offset, self._pending.get(key, -1))
            self._changed.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until every offset offered so far has been committed or has failed."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending and not self._busy, timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending) or self._stopped)
                if self._stopped:
                    return
                batch, self._pending, self._busy = forward(self.committed, self._pending), {}, True
            ok = self._commit(batch) if batch else True
            with self._changed:
                if batch and ok:
                    self.committed.update(batch)
                self.commits += int(bool(batch) and ok)
                self.failures += int(not ok)
                self._busy = False
                self._changed.notify_all()

    def _commit(self, offsets: dict[Partition, int]) -> bool:
        try:
            self.committer(offsets)
            return True
        except Exception as exc:  # noqa: BLE001 - a broker down stops nothing: logged, counted, the next batch retries
            _log.warning("offset commit of %d partition(s) failed: %s: %s", len(offsets), type(exc).__name__, exc)
            return False


@dataclass
class KafkaCommitter:
    """Commits offsets for `group_id` with kafka-python, without subscribing or joining the group.

    kafka-python's `commit(offsets)` with explicit offsets on a consumer that has no subscription sends an
    OffsetCommit with generation -1 and no member id (a standalone commit), after finding the group coordinator;
    it blocks at most `timeout_ms`, then raises KafkaTimeoutError. `api_version` is given so that creating the
    consumer does not contact the broker (kafka-python otherwise bootstraps in the constructor, and a failed
    constructor leaves its IO thread behind); each connection still asks the broker and uses the lower version.
    """

    group_id: str
    bootstrap_servers: str | list[str]
    timeout_ms: int = 5000
    config: dict[str, Any] = field(default_factory=dict)  # more KafkaConsumer settings (security, client_id, …)
    _consumer: Any = None

    def __post_init__(self) -> None:
        if not self.group_id.strip():
            raise ValueError("KafkaCommitter: group_id is empty; name the group whose lag kafka-exporter reports")
        # kafka-python requires request_timeout_ms above fetch_max_wait_ms (500 ms by default).
        if not 500 < self.timeout_ms <= 300_000:
            raise ValueError(f"KafkaCommitter: timeout_ms {self.timeout_ms} must lie in (500, 300000] ms")

    def __call__(self, offsets: Mapping[Partition, int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        if self._consumer is None:
            self._consumer = self._connect()
        request = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
        self._consumer.commit(request, timeout_ms=self.timeout_ms)

    def _connect(self) -> Any:
        from kafka import KafkaConsumer

        settings: dict[str, Any] = {"api_version": (2, 8), "request_timeout_ms": self.timeout_ms} | self.config
        return KafkaConsumer(
            group_id=self.group_id, bootstrap_servers=self.bootstrap_servers, enable_auto_commit=False, **settings
        )

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close(autocommit=False, timeout_ms=self.timeout_ms)
            self._consumer = None


@dataclass
class OffsetCommits:
    """What `commit_offsets` started: the listener (counts, committed offsets) and how to remove it."""

    spark: SparkSession
    listener: OffsetCommitListener
    committer: Committer

    def stop(self) -> None:
        """Remove the listener from the session, stop its thread, close the Kafka client."""
        self.spark.streams.removeListener(self.listener)
        self.listener.stop()
        close = getattr(self.committer, "close", None)
        if callable(close):
            close()


def commit_offsets(
    spark: SparkSession,
    group_id: str = "",
    bootstrap_servers: str | list[str] = "",
    *,
    query_name: str | None = None,
    committer: Committer | None = None,
    commit_source: SourceFilter = is_kafka_source,
    client_config: Mapping[str, Any] | None = None,
) -> OffsetCommits:
    """Commit every Kafka source's batch end offsets for `group_id` after each batch of this session's queries
    (`client_config`: kafka-python connection settings, e.g. `KafkaSecurity.kafka_python()`)."""
    if committer is None:
        if not group_id or not bootstrap_servers:
            raise ValueError("commit_offsets needs group_id and bootstrap_servers (or a committer)")
        committer = KafkaCommitter(group_id, bootstrap_servers, config=dict(client_config or {}))
    listener = OffsetCommitListener(committer, commit_source, query_name)
    spark.streams.addListener(listener)
    return OffsetCommits(spark, listener, committer)
