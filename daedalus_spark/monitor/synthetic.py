"""Monitor (test double of a job): an HTTP exporter of the agent's metric names with known, deterministic rates."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daedalus_spark import metricnames as names
from daedalus_spark.domain import SPARK_DRIVER_ID

BASE = 1e6  # counters start high, so PromQL's rate() never limits its extrapolation at zero


@dataclass(eq=False)
class SyntheticJob(Collector):
    """`executors` executors (ids 1..n) plus a driver row; counters grow linearly with the clock.

    Executor i reads `throughput_per_s(i)` records/s at CPU `utilization_ratio(i)` of its `limit_cores`; the
    topic grows by the sum of the throughputs over `partitions` partitions. `nan` makes executor 1's CPU counter NaN.
    The query completes `batches_per_s` batches a second, reading the workload, busy `batch_seconds_per_s`.
    Like the agent, the job-wide gauges carry `application_id`, and the agent's target is the executor count.
    """

    executors: int = 4
    partitions: int = 4
    limit_cores: float = 0.5
    lag_records: float = 1234.0
    clock: Callable[[], float] = time.time
    nan: bool = False
    batches_per_s: float = 0.5
    batch_seconds_per_s: float = 0.8
    started_s: float = field(default=0.0)
    application_id: str = "app-20261124000000-0001"

    def __post_init__(self) -> None:
        self.started_s = self.started_s or self.clock()

    @staticmethod
    def throughput_per_s(i: int) -> float:
        return 100.0 + 10.0 * i

    def utilization_ratio(self, i: int) -> float:
        return 0.2 + 0.6 * i / max(1, self.executors)

    def workload_per_s(self) -> float:
        return sum(self.throughput_per_s(i) for i in range(1, self.executors + 1))

    def collect(self) -> Iterator[Metric]:
        elapsed = self.clock() - self.started_s
        ids = [str(i) for i in range(1, self.executors + 1)]
        records = CounterMetricFamily(names.EXECUTOR_RECORDS, "records", labels=["executor_id"])
        cpu = CounterMetricFamily(names.EXECUTOR_CPU_SECONDS, "cgroup CPU seconds", labels=["executor_id"])
        limit = GaugeMetricFamily(names.EXECUTOR_CPU_LIMIT_CORES, "CPU quota", labels=["executor_id"])
        busy = CounterMetricFamily(names.EXECUTOR_BUSY_SECONDS, "task time", labels=["executor_id"])
        cores = GaugeMetricFamily(names.EXECUTOR_CORES, "cores", labels=["executor_id"])
        for e in ids:
            i = int(e)
            records.add_metric([e], BASE + self.throughput_per_s(i) * elapsed)
            used = self.utilization_ratio(i) * self.limit_cores * elapsed
            cpu.add_metric([e], float("nan") if self.nan and i == 1 else BASE + used)
            limit.add_metric([e], self.limit_cores)
            busy.add_metric([e], BASE + 2 * self.utilization_ratio(i) * elapsed)
            cores.add_metric([e], 2.0)
        records.add_metric([SPARK_DRIVER_ID], 0.0)
        busy.add_metric([SPARK_DRIVER_ID], BASE + 0.05 * elapsed)
        yield from (records, cpu, limit, busy, cores)
        offsets = CounterMetricFamily(names.SOURCE_LATEST_OFFSET, "end offset", labels=["topic", "partition"])
        for p in range(self.partitions):
            offsets.add_metric(["events", str(p)], BASE + self.workload_per_s() / self.partitions * elapsed)
        yield offsets
        yield GaugeMetricFamily(names.LAG_RECORDS, "lag", value=self.lag_records)
        app = [self.application_id]
        for name, value in (
            (names.EXECUTORS, float(self.executors)),
            (names.EXECUTORS_TARGET, float(self.executors)),
            (names.UPTIME_SECONDS, elapsed),
        ):
            gauge = GaugeMetricFamily(name, "the job's", labels=["application_id"])
            gauge.add_metric(app, value)
            yield gauge
        yield from self._query_progress(elapsed)

    def _query_progress(self, elapsed: float) -> Iterator[Metric]:
        rates = {
            names.QUERY_BATCHES: self.batches_per_s,
            names.QUERY_INPUT_RECORDS: self.workload_per_s(),
            names.QUERY_BATCH_SECONDS: self.batch_seconds_per_s,
        }
        for name, per_s in rates.items():
            counter = CounterMetricFamily(name, "query progress", labels=["query"])
            counter.add_metric(["wordcount"], BASE + per_s * elapsed)
            yield counter


@dataclass
class Exporter:
    server: WSGIServer
    thread: threading.Thread

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve(job: SyntheticJob) -> Exporter:
    """Serve the job's /metrics on 127.0.0.1 at a free port."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(job)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    return Exporter(server, thread)
