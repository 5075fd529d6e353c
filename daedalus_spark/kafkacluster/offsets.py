"""Monitor (Kafka): a topic's offsets read from the broker itself — each partition's log-end and log-start offset
and a consumer group's committed offset — so workload and lag move between batches and through a rescale's stall.

`client_config` passes a user's connection settings through to kafka-python unchanged: `security_protocol`
(SSL, SASL_SSL, SASL_PLAINTEXT), `ssl_cafile`, `ssl_certfile`, `ssl_keyfile`, `sasl_mechanism`,
`sasl_plain_username`, `sasl_plain_password`, ... (docs/spark.md, "Kafka").
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class TopicMissing(LookupError):
    """The topic does not exist on the broker (never created, or deleted)."""


@dataclass
class BrokerOffsets:
    """Offsets of one broker's topics; the admin connection is made on first use and again after a failure. One call
    at a time: the agent's scrapes come from several threads."""

    bootstrap: str
    client_config: Mapping[str, Any] = field(default_factory=dict)
    timeout_ms: int = 5000
    _admin: Any = None
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def _client(self) -> Any:
        if self._admin is None:
            from kafka.admin import KafkaAdminClient

            # a broker that is down fails a connect within the timeout too (kafka-python's bootstrap waits 30 s)
            settings = {"request_timeout_ms": self.timeout_ms, "bootstrap_timeout_ms": self.timeout_ms}
            settings |= self.client_config
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="daedalus-offsets", **settings)
        return self._admin

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            try:
                return getattr(self._client(), method)(*args, **kwargs)
            except Exception:
                self.close()  # a broker restart or a timeout: connect afresh next time
                raise

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids, as the broker's metadata has them now (a raised count shows at once)."""
        (described,) = self._call("describe_topics", [topic])
        if described["error_code"] != 0 or not described["partitions"]:
            raise TopicMissing(
                f"Kafka topic {topic!r} not found on {self.bootstrap} (error code {described['error_code']})"
            )
        return sorted(int(p["partition_index"]) for p in described["partitions"])

    def _offsets(self, topic: str, spec: str) -> dict[int, int]:
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        which = getattr(OffsetSpec, spec)
        found = self._call(
            "list_partition_offsets",
            {TopicPartition(topic, p): which for p in self.partitions(topic)},
            timeout_ms=self.timeout_ms,
        )
        return {tp.partition: int(o.offset) for tp, o in sorted(found.items())}

    def latest_offsets(self, topic: str) -> dict[int, int]:
        """Each partition's log-end offset: the next offset a producer's record gets."""
        return self._offsets(topic, "LATEST")

    def earliest_offsets(self, topic: str) -> dict[int, int]:
        """Each partition's log-start offset (0 until retention deletes a segment)."""
        return self._offsets(topic, "EARLIEST")

    def committed(self, topic: str, group: str) -> dict[int, int]:
        """The offsets `group` committed on `topic`'s partitions; a partition it never committed is left out."""
        found = self._call("list_group_offsets", {group: None})
        return {
            tp.partition: int(meta.offset)
            for tp, meta in sorted(found.get(group, {}).items())
            if tp.topic == topic and meta.offset >= 0
        }

    def lag(self, topic: str, group: str) -> dict[int, int]:
        """Per partition, log-end minus committed offset; a partition without a commit counts from its log start
        (where a job reading from the earliest offsets begins): unknown is never reported as 0."""
        ends, done = self.latest_offsets(topic), self.committed(topic, group)
        missing = [p for p in ends if p not in done]
        starts = self.earliest_offsets(topic) if missing else {}
        return {p: max(0, end - done.get(p, starts.get(p, 0))) for p, end in ends.items()}

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            with contextlib.suppress(Exception):  # closing a broken connection: nothing left to do
                admin.close()
