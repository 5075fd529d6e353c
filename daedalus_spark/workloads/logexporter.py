"""Workload: kafka-exporter's offset and lag metrics for the local log — its stand-in where no Kafka runs.

The series carry kafka-exporter's names and labels (`kafka_topic_partition_current_offset{topic, partition}`,
`kafka_consumergroup_current_offset` and `kafka_consumergroup_lag{consumergroup, topic, partition}`), so the
native query set (monitor/native.py) reads the local log here as it reads Kafka in production.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daedalus_spark.workloads.locallog import LocalLog


@dataclass(eq=False)  # hashable: registries keep collectors in sets
class LogOffsetsCollector(Collector):
    """At each scrape: every partition's end offset, and each group's committed offset and lag."""

    log: LocalLog
    topics: Sequence[str]
    groups: Sequence[str]

    def collect(self) -> Iterator[Metric]:
        current = GaugeMetricFamily(
            "kafka_topic_partition_current_offset", "End offset of a partition", labels=["topic", "partition"]
        )
        labels = ["consumergroup", "topic", "partition"]
        committed = GaugeMetricFamily(
            "kafka_consumergroup_current_offset", "Offset the group committed, per partition", labels=labels
        )
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "End offset minus the committed one", labels=labels)
        for topic in self.topics:
            ends = self.log.latest_offsets(topic)
            for partition, end in sorted(ends.items()):
                current.add_metric([topic, str(partition)], float(end))
            for group in self.groups:
                done = self.log.committed(topic, group)
                for partition, end in sorted(ends.items()):
                    key = [group, topic, str(partition)]
                    committed.add_metric(key, float(done.get(partition, 0)))
                    lag.add_metric(key, float(end - done.get(partition, 0)))
        yield from (current, committed, lag)


def serve(
    log: LocalLog, topics: Sequence[str], groups: Sequence[str], port: int, host: str = "127.0.0.1"
) -> WSGIServer:
    """Serve the collector's /metrics on host:port (0: any free port) from a daemon thread; `shutdown()` stops it."""
    registry = CollectorRegistry()
    registry.register(LogOffsetsCollector(log, topics, groups))
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.workloads.logexporter", description=__doc__)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--topic", action="append", required=True)
    p.add_argument("--group", action="append", help="consumer group (repeatable; default: the local source's, spark)")
    p.add_argument("--port", type=int, default=9308, help="kafka-exporter's port")
    args = p.parse_args(argv)
    serve(LocalLog(args.log_dir), args.topic, args.group or ["spark"], args.port)
    threading.Event().wait()  # until killed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
