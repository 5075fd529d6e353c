"""Monitor (agent): the Prometheus collector exposing executor, query, lag and scaling metrics of the driver."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daedalus_spark import metricnames as names
from daedalus_spark.agent.driverui import ExecutorInfo, live_executors
from daedalus_spark.agent.queries import BoundedOffsets, LatestOffsets, QueryStats, offsets_by_partition

P = names.PREFIX  # the agent-only metrics (queries, poll errors) are named here


@dataclass
class DriverView:
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
    # The live executors that count as the scale-out (those asked to leave left out): the scaler's view.
    serving: Callable[[Sequence[ExecutorInfo]], list[ExecutorInfo]] = live_executors
    view: DriverView = field(default_factory=DriverView)
    clock: Callable[[], float] = time.time
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, view: DriverView) -> None:
        with self._lock:
            self.view = view

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            view = self.view
        yield from self._executor_metrics(view)
        yield from self._query_metrics(view)
        yield from self._lag_metrics(view)
        yield from self._app_metrics(view)

    def _executor_metrics(self, view: DriverView) -> Iterator[Metric]:
        labels = ["application_id", "executor_id"]
        records = CounterMetricFamily(
            names.EXECUTOR_RECORDS, "Source records read by tasks of the executor", labels=labels
        )
        busy = CounterMetricFamily(
            names.EXECUTOR_BUSY_SECONDS, "Task time on the executor (Spark totalDuration)", labels=labels
        )
        cores = GaugeMetricFamily(names.EXECUTOR_CORES, "Cores of the executor", labels=labels)
        active = GaugeMetricFamily(names.EXECUTOR_ACTIVE_TASKS, "Tasks running on the executor", labels=labels)
        seen = {e.executor_id for e in view.executors}
        for executor_id in sorted(seen | set(view.records)):
            records.add_metric([self.app_id, executor_id], float(view.records.get(executor_id, 0)))
        for e in view.executors:
            busy.add_metric([self.app_id, e.executor_id], e.busy_s)
            if e.active:
                cores.add_metric([self.app_id, e.executor_id], float(e.cores))
                active.add_metric([self.app_id, e.executor_id], float(e.active_tasks))
        yield from (records, busy, cores, active)

    def _query_metrics(self, view: DriverView) -> Iterator[Metric]:
        labels = ["application_id", "query"]
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
            "input": GaugeMetricFamily(
                P + "query_input_records_per_second", "Arrival rate of the last batch", labels=labels
            ),
            "processed": GaugeMetricFamily(
                P + "query_processed_records_per_second", "Processing rate of the last batch", labels=labels
            ),
            "duration": GaugeMetricFamily(
                P + "query_batch_duration_seconds", "Duration of the last batch", labels=labels
            ),
            "rows": CounterMetricFamily(names.QUERY_INPUT_RECORDS, "Records read by the query", labels=labels),
            "batch": GaugeMetricFamily(P + "query_last_batch_id", "Id of the last completed batch", labels=labels),
            "batches": CounterMetricFamily(
                names.QUERY_BATCHES, "Micro-batches completed (0-row batches included)", labels=labels
            ),
            "seconds": CounterMetricFamily(
                names.QUERY_BATCH_SECONDS, "Durations of the completed batches (triggerExecution)", labels=labels
            ),
        }
        for q in view.queries:
            key = [self.app_id, q.name]
            families["input"].add_metric(key, q.input_per_s)
            families["processed"].add_metric(key, q.processed_per_s)
            families["duration"].add_metric(key, q.batch_duration_s)
            families["rows"].add_metric(key, float(q.input_rows_total))
            families["batch"].add_metric(key, float(q.batch_id))
            families["batches"].add_metric(key, float(q.batches_total))
            families["seconds"].add_metric(key, q.batch_seconds_total)
        yield from families.values()

    def _lag_metrics(self, view: DriverView) -> Iterator[Metric]:
        labels = ["application_id", "query", "topic", "partition"]
        per = GaugeMetricFamily(
            names.SOURCE_LAG_RECORDS, "Offsets behind latest per source partition (consumer lag)", labels=labels
        )
        latest = CounterMetricFamily(
            names.SOURCE_LATEST_OFFSET, "Latest (end) offset of the source partition", labels=labels
        )
        committed = CounterMetricFamily(
            names.SOURCE_COMMITTED_OFFSET, "End offset of the last completed batch", labels=labels
        )
        total = GaugeMetricFamily(
            names.LAG_RECORDS,
            "Offsets behind latest over all partitions (consumer lag)",
            labels=["application_id", "query"],
        )
        failures = CounterMetricFamily(
            names.SOURCE_OFFSETS_FAILURES,
            "Reads of a topic's live end offsets that failed (its lag series are then left out)",
            labels=["application_id", "topic"],
        )
        for topic, reader in sorted(self.latest.items()):
            if isinstance(reader, BoundedOffsets):
                failures.add_metric([self.app_id, topic], float(reader.failures))
        for q in view.queries:
            offsets = offsets_by_partition(q, self.latest)
            for (topic, partition), (end, done) in sorted(offsets.items()):
                key = [self.app_id, q.name, topic, partition]
                per.add_metric(key, float(end - done))
                latest.add_metric(key, float(end))
                committed.add_metric(key, float(done))
            if len(offsets) == len(q.committed):  # a partition left out: the query's lag is unknown, not smaller
                total.add_metric([self.app_id, q.name], float(sum(e - d for e, d in offsets.values())))
        yield from (per, latest, committed, total, failures)

    def _app_metrics(self, view: DriverView) -> Iterator[Metric]:
        labels = ["application_id"]
        live = len(self.serving(view.executors))
        executors = GaugeMetricFamily(names.EXECUTORS, "Live executors (driver excluded)", labels=labels)
        executors.add_metric([self.app_id], float(live))
        target = GaugeMetricFamily(
            names.EXECUTORS_TARGET, "Executor target last applied (no sample before the first)", labels=labels
        )
        if (applied := self.target()) is not None:
            target.add_metric([self.app_id], float(applied))
        uptime = GaugeMetricFamily(names.UPTIME_SECONDS, "Seconds since the agent started with the app", labels=labels)
        uptime.add_metric([self.app_id], self.clock() - self.started_at)
        errors = CounterMetricFamily(P + "agent_poll_errors", "Failed polls of the driver UI", labels=labels)
        errors.add_metric([self.app_id], float(view.poll_errors))
        yield from (executors, target, uptime, errors)
