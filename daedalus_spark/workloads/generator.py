"""Workload: trace-driven generator producing pipeline records to Kafka or the local log at a paced rate."""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

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
    """kafka-python producer; the topic must exist with `partitions` partitions (production path)."""

    bootstrap: str
    topic: str
    partitions: int
    _producer: object = field(init=False)

    def __post_init__(self) -> None:
        from kafka import KafkaProducer

        self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=20, acks=1)

    def send(self, partition: int, records: Sequence[str]) -> None:
        for record in records:
            self._producer.send(self.topic, value=record.encode(), partition=partition)  # type: ignore[attr-defined]

    def flush(self) -> None:
        self._producer.flush()  # type: ignore[attr-defined]


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
    lagging_ticks: int = 0
    _next_partition: int = 0

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
        for i in range(count):
            batches[(self._next_partition + i) % self.sink.partitions].append(self.make(rng, now))
        self._next_partition = (self._next_partition + count) % self.sink.partitions
        for partition, records in enumerate(batches):
            if records:
                self.sink.send(partition, records)
        self.keeper.record(count)
        self.metrics.produced.labels(self.topic).inc(count)

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
    p.add_argument("--metrics-port", type=int, default=0, help="serve Prometheus metrics here (0 = off)")
    p.add_argument("--metrics-host", default="127.0.0.1")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    topic = args.topic or args.pipeline
    trace = slice_trace(read_trace(args.trace or BUNDLED_TRACES[args.pipeline]), args.start_s, args.duration_s)
    if args.sink == "local":
        log = LocalLog(args.log_dir)
        log.create_topic(topic, args.partitions)
        sink: RecordSink = LocalLogSink(log, topic, args.partitions)
    else:
        sink = KafkaSink(args.bootstrap_servers, topic, args.partitions)
    gen = Generator(PaceKeeper(Pacer(trace, args.compression, args.scale)), sink, MAKERS[args.pipeline], topic)
    if args.metrics_port:
        start_http_server(args.metrics_port, addr=args.metrics_host, registry=gen.metrics.registry)
    produced = gen.run()
    print(f"generator: produced {produced} records to {topic}; lagging ticks {gen.lagging_ticks}")
    return 0 if gen.lagging_ticks == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
