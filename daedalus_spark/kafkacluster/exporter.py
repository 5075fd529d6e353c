"""Monitor (Kafka): kafka-exporter's offset and lag series for a topic and its consumer groups, read from the
broker's own offsets at each scrape (BrokerOffsets).

Series, names and labels as kafka-exporter has them, so the native query set (monitor/native.py) reads either:
`kafka_topic_partition_current_offset` and `kafka_topic_partition_oldest_offset{topic, partition}`,
`kafka_consumergroup_current_offset{consumergroup, topic, partition}` (the partitions the group committed) and
`kafka_consumergroup_lag{consumergroup, topic, partition}` (log-end minus committed; from the log start where the
group has not committed, never 0 for unknown). A scrape that cannot reach the broker, or finds the topic gone,
serves none of the topic's series and logs why: the monitor then sees them missing, not zero.
"""

from __future__ import annotations

import argparse
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daedalus_spark.kafkacluster import security
from daedalus_spark.kafkacluster.offsets import BrokerOffsets

_log = logging.getLogger(__name__)
GROUP_LABELS = ["consumergroup", "topic", "partition"]


@dataclass(eq=False)  # hashable: registries keep collectors in sets
class BrokerOffsetsCollector(Collector):
    """At each scrape: every partition's log-end and log-start offset, each group's committed offset and lag."""

    offsets: BrokerOffsets
    topics: Sequence[str]
    groups: Sequence[str]

    def collect(self) -> Iterator[Metric]:
        current = GaugeMetricFamily(
            "kafka_topic_partition_current_offset", "Log-end offset of a partition", labels=["topic", "partition"]
        )
        oldest = GaugeMetricFamily(
            "kafka_topic_partition_oldest_offset", "Log-start offset of a partition", labels=["topic", "partition"]
        )
        committed = GaugeMetricFamily(
            "kafka_consumergroup_current_offset", "Offset the group committed, per partition", labels=GROUP_LABELS
        )
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "Log-end minus committed offset", labels=GROUP_LABELS)
        for topic in self.topics:
            try:
                ends = self.offsets.latest_offsets(topic)
                starts = self.offsets.earliest_offsets(topic)
                done = {group: self.offsets.committed(topic, group) for group in self.groups}
            except Exception as exc:  # noqa: BLE001 - one scrape without the topic's series, said why
                _log.warning("kafka offsets of topic %r unavailable: %s: %s", topic, type(exc).__name__, exc)
                continue
            for partition, end in ends.items():
                current.add_metric([topic, str(partition)], float(end))
                oldest.add_metric([topic, str(partition)], float(starts.get(partition, 0)))
            for group, marks in done.items():
                for partition, end in ends.items():
                    key = [group, topic, str(partition)]
                    if partition in marks:
                        committed.add_metric(key, float(marks[partition]))
                    base = marks.get(partition, starts.get(partition, 0))
                    lag.add_metric(key, float(max(0, end - base)))
        yield from (current, oldest, committed, lag)


def serve(
    bootstrap: str,
    topics: Sequence[str],
    groups: Sequence[str],
    port: int,
    *,
    host: str = "127.0.0.1",
    client_config: Mapping[str, Any] | None = None,
) -> WSGIServer:
    """Serve the collector's /metrics on host:port (0: any free port) from a daemon thread; `shutdown()` stops it."""
    registry = CollectorRegistry()
    offsets = BrokerOffsets(bootstrap, dict(client_config or {}))
    registry.register(BrokerOffsetsCollector(offsets, list(topics), list(groups)))
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.kafkacluster.exporter", description=__doc__)
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", action="append", required=True)
    p.add_argument("--group", action="append", required=True, help="consumer group (repeatable)")
    p.add_argument("--port", type=int, default=9308, help="kafka-exporter's port")
    p.add_argument("--host", default="127.0.0.1")
    security.add_arguments(p)
    args = p.parse_args(argv)
    try:
        settings = security.from_arguments(args)
    except security.KafkaSecurityError as exc:
        p.error(str(exc))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(
        args.bootstrap_servers, args.topic, args.group, args.port, host=args.host, client_config=settings.kafka_python()
    )
    threading.Event().wait()  # until killed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
