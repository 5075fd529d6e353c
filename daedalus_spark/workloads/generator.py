"""Workload: trace-driven generator producing pipeline records to Kafka or the local log at a paced rate."""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from daedalus_spark.kafkacluster import security
from daedalus_spark.monitor.files import BUNDLED_TRACES, read_trace
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import MAKERS, RecordMaker


class RecordSink(Protocol):
    partitions: int

    def send(self, partition: int, records: Sequence[str]) -> None: ...

    def flush(self) -> None: ...


@dataclass
class LocalLogSink:
    log: LocalLog
    topic: str
    partitions: int

    def send(self, partition: int, records: Sequence[str]) -> None:
        self.log.append(self.topic, partition, records)

    def flush(self) -> None:
        return None


@dataclass
class KafkaSink:
    """confluent-kafka (librdkafka) producer: every record with a key and an explicit partition, idempotent (a retried
    send is not written twice). The topic must exist with at least `partitions` partitions. `config` adds librdkafka
    settings (security.protocol, ssl.ca.location, sasl.mechanism, sasl.username, ...).

    confluent-kafka rather than kafka-python: on this 2-core machine it produced 750,000 records/s against
    kafka-python's 52,000 (docs/results/2026-11-26-kafka.md), and the demo needs 3 x 13,500/s while Spark runs."""

    bootstrap: str
    topic: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    sent: int = 0
    failed: int = 0
    _producer: Any = field(init=False, default=None)
    _error: str = field(init=False, default="")

    def __post_init__(self) -> None:
        from confluent_kafka import Producer

        settings = {
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "client.id": "daedalus-generator",
            **self.config,
        }
        self._producer = Producer(settings)
        metadata = self._producer.list_topics(self.topic, timeout=self.timeout_s).topics.get(self.topic)
        if metadata is None or metadata.error is not None or len(metadata.partitions) < self.partitions:
            have = "missing" if metadata is None or metadata.error else f"{len(metadata.partitions)} partitions"
            raise SystemExit(
                f"generator: Kafka topic {self.topic!r} on {self.bootstrap} is {have}; "
                f"it must exist with {self.partitions} partitions"
            )

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failed += 1
            self._error = str(error)

    def send(self, partition: int, records: Sequence[str]) -> None:
        produce, poll = self._producer.produce, self._producer.poll
        for record in records:
            key = str(self.sent).encode()
            while True:
                try:
                    produce(self.topic, record.encode(), key, partition=partition, on_delivery=self._delivered)
                    break
                except BufferError:  # librdkafka's queue is full: serve delivery reports, then retry
                    poll(0.05)
            self.sent += 1
        poll(0)

    def flush(self) -> None:
        left = self._producer.flush(self.timeout_s)
        if left or self.failed:
            raise RuntimeError(
                f"generator: {left} record(s) undelivered after {self.timeout_s:g} s, {self.failed} failed "
                f"(last error: {self._error or 'none'}) on topic {self.topic!r}"
            )


@dataclass
class GeneratorMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.produced = Counter(
            "daedalus_generator_records_produced",
            "Records produced to the source topic",
            ["topic"],
            registry=self.registry,
        )
        self.target = Gauge(
            "daedalus_generator_target_rate_records_per_second", "Trace target rate", ["topic"], registry=self.registry
        )
        self.behind = Gauge(
            "daedalus_generator_behind_records", "Records due but not yet produced", ["topic"], registry=self.registry
        )


@dataclass
class Generator:
    """Replays a trace: every tick, produces the records due by now, round-robin over partitions."""

    keeper: PaceKeeper
    sink: RecordSink
    make: RecordMaker
    topic: str
    metrics: GeneratorMetrics = field(default_factory=GeneratorMetrics)
    clock: Callable[[], float] = time.monotonic
    tick_s: float = 0.2
    seed: int = 1
    weights: Sequence[float] = ()  # share of the records per partition (skew); empty: round-robin, equal shares
    lagging_ticks: int = 0
    _next_partition: int = 0
    _assigned: list[float] = field(default_factory=list)

    def step(self, elapsed_s: float) -> int:
        """Produce what is due; returns the number of records produced."""
        count = self.keeper.next_batch(elapsed_s)
        if count:
            self._produce(count, elapsed_s)
        self.metrics.target.labels(self.topic).set(self.keeper.pacer.rate_at(elapsed_s))
        self.metrics.behind.labels(self.topic).set(self.keeper.behind(elapsed_s))
        if not self.keeper.keeping_up(elapsed_s):
            self.lagging_ticks += 1
        return count

    def _produce(self, count: int, elapsed_s: float) -> None:
        rng = random.Random(self.seed * 1_000_003 + self.keeper.produced)  # noqa: S311 - workload text, not secrets
        now = time.time()
        batches: list[list[str]] = [[] for _ in range(self.sink.partitions)]
        for partition in self._partitions(count):
            batches[partition].append(self.make(rng, now))
        for partition, records in enumerate(batches):
            if records:
                self.sink.send(partition, records)
        self.keeper.record(count)
        self.metrics.produced.labels(self.topic).inc(count)

    def _partitions(self, count: int) -> list[int]:
        """The partition of each of the next `count` records: round-robin, or each record to the partition furthest
        below its weighted share of all records so far (deterministic, exact to within one record per partition)."""
        n = self.sink.partitions
        if not self.weights:
            out = [(self._next_partition + i) % n for i in range(count)]
            self._next_partition = (self._next_partition + count) % n
            return out
        if len(self.weights) != n or min(self.weights) < 0 or sum(self.weights) <= 0:
            raise ValueError(f"partition weights {list(self.weights)}: need {n} non-negative weights, not all 0")
        total = sum(self.weights)
        shares = [w / total for w in self.weights]
        if not self._assigned:
            self._assigned = [0.0] * n
        done = sum(self._assigned)
        out = []
        for _ in range(count):
            done += 1
            partition = max(range(n), key=lambda p: shares[p] * done - self._assigned[p])
            self._assigned[partition] += 1
            out.append(partition)
        return out

    def run(self, stop: threading.Event | None = None, report: Callable[[str], None] = print) -> int:
        """Replay until the trace ends or `stop` is set; returns the records produced."""
        stop = stop or threading.Event()
        start = self.clock()
        while not stop.is_set():
            elapsed = self.clock() - start
            self.step(elapsed)
            if self.keeper.finished(elapsed):
                break
            if self.lagging_ticks and self.lagging_ticks % max(1, int(5 / self.tick_s)) == 1:
                report(f"generator: cannot keep up, {self.keeper.behind(elapsed)} records behind target")
            stop.wait(self.tick_s)
        self.sink.flush()
        return self.keeper.produced


def slice_trace(trace: np.ndarray, start_s: int, duration_s: int | None) -> np.ndarray:
    end = len(trace) if duration_s is None else start_s + duration_s
    return trace[start_s:end]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.workloads.generator", description=__doc__)
    p.add_argument("pipeline", choices=sorted(MAKERS))
    p.add_argument("--trace", help="second|count trace (default: the pipeline's bundled paper trace)")
    p.add_argument("--start-s", type=int, default=0, help="trace second to start at")
    p.add_argument("--duration-s", type=int, default=None, help="trace seconds to replay (default: all)")
    p.add_argument("--compression", type=float, default=1.0, help="trace seconds per wall second")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the trace's counts")
    p.add_argument("--sink", choices=("local", "kafka"), default="local")
    p.add_argument("--log-dir", default="/tmp/daedalus-log")
    p.add_argument("--bootstrap-servers", default="localhost:9092")
    p.add_argument("--topic", default=None, help="default: the pipeline name")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument(
        "--partition-weights", default="", help="comma-separated share per partition, e.g. 4,2,1,1 (default: equal)"
    )
    p.add_argument("--metrics-port", type=int, default=0, help="serve Prometheus metrics here (0 = off)")
    p.add_argument("--metrics-host", default="127.0.0.1")
    security.add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        settings = security.from_arguments(args)
    except security.KafkaSecurityError as exc:
        p.error(str(exc))
    topic = args.topic or args.pipeline
    trace = slice_trace(read_trace(args.trace or BUNDLED_TRACES[args.pipeline]), args.start_s, args.duration_s)
    if args.sink == "local":
        log = LocalLog(args.log_dir)
        log.create_topic(topic, args.partitions)
        sink: RecordSink = LocalLogSink(log, topic, args.partitions)
    else:
        sink = KafkaSink(args.bootstrap_servers, topic, args.partitions, config=settings.librdkafka())
    weights = [float(w) for w in args.partition_weights.split(",")] if args.partition_weights else []
    gen = Generator(
        PaceKeeper(Pacer(trace, args.compression, args.scale)), sink, MAKERS[args.pipeline], topic, weights=weights
    )
    if args.metrics_port:
        start_http_server(args.metrics_port, addr=args.metrics_host, registry=gen.metrics.registry)
    produced = gen.run()
    print(f"generator: produced {produced} records to {topic}; lagging ticks {gen.lagging_ticks}")
    return 0 if gen.lagging_ticks == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
