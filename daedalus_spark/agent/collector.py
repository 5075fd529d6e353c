"""Monitor (agent): the Prometheus collector exposing executor, query, lag and scaling metrics of the driver."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daedalus_spark.agent.driverui import ExecutorInfo
from daedalus_spark.agent.queries import LatestOffsets, QueryStats, offsets_by_partition

P = "daedalus_spark_"


@dataclass
class Snapshot:
    """What the poller last saw; replaced whole, so a scrape reads one consistent view."""

    executors: list[ExecutorInfo] = field(default_factory=list)
    records: dict[str, int] = field(default_factory=dict)
    queries: list[QueryStats] = field(default_factory=list)
    poll_errors: int = 0


@dataclass(eq=False)  # hashable: registries and listener buses keep it in sets
class AgentCollector(Collector):
    app_id: str
    started_at: float
    latest: Mapping[str, LatestOffsets]
    target: Callable[[], int | None]
    snapshot: Snapshot = field(default_factory=Snapshot)
    clock: Callable[[], float] = time.time
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, snapshot: Snapshot) -> None:
        with self._lock:
            self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snap = self.snapshot
        yield from self._executor_metrics(snap)
        yield from self._query_metrics(snap)
        yield from self._lag_metrics(snap)
        yield from self._app_metrics(snap)

    def _executor_metrics(self, snap: Snapshot) -> Iterator[Metric]:
        labels = ["application_id", "executor_id"]
        records = CounterMetricFamily(P + "executor_records_processed", "Source records read by tasks of the executor",
                                      labels=labels)
        busy = CounterMetricFamily(P + "executor_busy_seconds", "Task time on the executor (Spark totalDuration)",
                                   labels=labels)
        cores = GaugeMetricFamily(P + "executor_cores", "Cores of the executor", labels=labels)
        active = GaugeMetricFamily(P + "executor_active_tasks", "Tasks running on the executor", labels=labels)
        seen = {e.executor_id for e in snap.executors}
        for executor_id in sorted(seen | set(snap.records)):
            records.add_metric([self.app_id, executor_id], float(snap.records.get(executor_id, 0)))
        for e in snap.executors:
            busy.add_metric([self.app_id, e.executor_id], e.busy_s)
            if e.active:
                cores.add_metric([self.app_id, e.executor_id], float(e.cores))
                active.add_metric([self.app_id, e.executor_id], float(e.active_tasks))
        yield from (records, busy, cores, active)

    def _query_metrics(self, snap: Snapshot) -> Iterator[Metric]:
        labels = ["application_id", "query"]
        families = {
            "input": GaugeMetricFamily(P + "query_input_records_per_second", "Arrival rate of the last batch", labels=labels),
            "processed": GaugeMetricFamily(P + "query_processed_records_per_second", "Processing rate of the last batch",
                                           labels=labels),
            "duration": GaugeMetricFamily(P + "query_batch_duration_seconds", "Duration of the last batch", labels=labels),
            "rows": CounterMetricFamily(P + "query_input_records", "Records read by the query", labels=labels),
            "batch": GaugeMetricFamily(P + "query_last_batch_id", "Id of the last completed batch", labels=labels),
        }
        for q in snap.queries:
            key = [self.app_id, q.name]
            families["input"].add_metric(key, q.input_per_s)
            families["processed"].add_metric(key, q.processed_per_s)
            families["duration"].add_metric(key, q.batch_duration_s)
            families["rows"].add_metric(key, float(q.input_rows_total))
            families["batch"].add_metric(key, float(q.batch_id))
        yield from families.values()

    def _lag_metrics(self, snap: Snapshot) -> Iterator[Metric]:
        labels = ["application_id", "query", "topic", "partition"]
        per = GaugeMetricFamily(P + "source_lag_records", "Offsets behind latest per source partition (consumer lag)",
                                labels=labels)
        latest = GaugeMetricFamily(P + "source_latest_offset", "Latest (end) offset of the source partition",
                                   labels=labels)
        committed = GaugeMetricFamily(P + "source_committed_offset", "End offset of the last completed batch",
                                      labels=labels)
        total = GaugeMetricFamily(P + "lag_records", "Offsets behind latest over all partitions (consumer lag)",
                                  labels=["application_id", "query"])
        for q in snap.queries:
            offsets = offsets_by_partition(q, self.latest)
            for (topic, partition), (end, done) in sorted(offsets.items()):
                key = [self.app_id, q.name, topic, partition]
                per.add_metric(key, float(end - done))
                latest.add_metric(key, float(end))
                committed.add_metric(key, float(done))
            total.add_metric([self.app_id, q.name], float(sum(e - d for e, d in offsets.values())))
        yield from (per, latest, committed, total)

    def _app_metrics(self, snap: Snapshot) -> Iterator[Metric]:
        labels = ["application_id"]
        live = sum(1 for e in snap.executors if e.active and e.executor_id != "driver")
        executors = GaugeMetricFamily(P + "executors", "Live executors (driver excluded)", labels=labels)
        executors.add_metric([self.app_id], float(live))
        target = GaugeMetricFamily(P + "executors_target", "Executor target last applied (-1 = none)", labels=labels)
        applied = self.target()
        target.add_metric([self.app_id], float(-1 if applied is None else applied))
        uptime = GaugeMetricFamily(P + "uptime_seconds", "Seconds since the agent started with the app",
                                   labels=labels)
        uptime.add_metric([self.app_id], self.clock() - self.started_at)
        errors = CounterMetricFamily(P + "agent_poll_errors", "Failed polls of the driver UI", labels=labels)
        errors.add_metric([self.app_id], float(snap.poll_errors))
        yield from (executors, target, uptime, errors)
