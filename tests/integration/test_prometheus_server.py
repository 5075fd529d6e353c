"""PrometheusMonitor against a real Prometheus server scraping a synthetic job every second, then its faults;
the embedded ScrapeMonitor, scraping the same job, must agree with the server.

The tests of this module share one server (start-up costs seconds); the last one stops it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from daedalus_spark import waiting
from daedalus_spark.clock import SystemClock
from daedalus_spark.config import MonitorConfig
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus
from daedalus_spark.monitor.scrape import ScrapeMonitor
from daedalus_spark.monitor.synthetic import Exporter, SyntheticJob, serve

pytestmark = pytest.mark.skipif(
    find_binary() is None, reason="no prometheus binary (Debian package `prometheus`; .ci/run installs it)"
)

EXECUTORS = 3


@dataclass
class Stack:
    job: SyntheticJob
    exporter: Exporter
    prometheus: PrometheusServer
    scraper: ScrapeMonitor  # the embedded monitor, scraping the same exporter since the start

    def monitor(self, **overrides: object) -> PrometheusMonitor:
        config = MonitorConfig(prometheus_url=self.prometheus.url, scrape_interval_s=1, timeout_s=5, **overrides)  # type: ignore[arg-type]
        return PrometheusMonitor(config, "cpu")

    def instant(self, promql: str) -> list[dict]:
        answer = requests.get(self.prometheus.url + "/api/v1/query", params={"query": promql}, timeout=5)
        return answer.json()["data"]["result"]

    def wait_for(self, promql: str, done: object, timeout_s: float = 30) -> None:
        """Poll an instant query until `done(result)` holds (deadline, no fixed sleep)."""
        try:
            waiting.wait_until(lambda: done(self.instant(promql)), f"{promql!r} as expected", timeout_s)  # type: ignore[operator]
        except TimeoutError as exc:
            pytest.fail(f"{exc}:\n{self.prometheus.log_tail()}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    job = SyntheticJob(executors=EXECUTORS)
    exporter = serve(job)
    scraper = ScrapeMonitor(MonitorConfig(scrape_urls=[f"http://{exporter.target}/metrics"]), "cpu", SystemClock())
    scraper.start()
    prometheus = None
    try:
        prometheus = start_prometheus([exporter.target], workdir=tmp_path_factory.mktemp("prometheus"))
        s = Stack(job, exporter, prometheus, scraper)
        # Ready for a 6-s window: every grid point needs a 5-s rate() window of 1-s scrapes before it.
        s.wait_for("count_over_time(daedalus_spark_executors[20s])", lambda r: r and float(r[0]["value"][1]) >= 12)
        yield s
    finally:
        scraper.close()
        if prometheus is not None:
            prometheus.stop()
        exporter.stop()


def test_observation_has_the_served_numbers(stack: Stack) -> None:
    now = time.time()
    monitor = stack.monitor()
    try:
        obs = monitor.observe(start_s=now - 6, end_s=now)
    finally:
        monitor.close()
    assert obs.scaleout == EXECUTORS and obs.executor_ids == ("1", "2", "3")
    assert len(obs.workload_per_s) == 6
    assert obs.workload_per_s == pytest.approx([stack.job.workload_per_s()] * len(obs.workload_per_s), rel=0.02)
    for w in obs.executors:
        i = int(w.executor_id)
        assert w.throughput_per_s == pytest.approx([stack.job.throughput_per_s(i)] * len(w.throughput_per_s), rel=0.02)
        assert w.utilization_ratio == pytest.approx(
            [stack.job.utilization_ratio(i)] * len(w.utilization_ratio), rel=0.02
        )
    assert obs.consumer_lag_records == stack.job.lag_records
    assert obs.uptime_s == pytest.approx(now - stack.job.started_s, abs=3)
    assert (obs.application_id, obs.agent_target) == (stack.job.application_id, EXECUTORS)
    # the real server evaluates the default per-partition query: sum by (topic, partition) (rate(...))
    each = stack.job.workload_per_s() / stack.job.partitions
    assert [(p.topic, p.partition) for p in obs.partitions] == [("events", i) for i in range(stack.job.partitions)]
    assert [p.records_per_s for p in obs.partitions] == pytest.approx([each] * stack.job.partitions, rel=0.02)
    # the batch queries: each rate x step summed over the window's samples
    seconds = len(obs.workload_per_s) * obs.step_s
    assert obs.batches is not None
    assert (obs.batches.batches, obs.batches.input_records, obs.batches.duration_s) == pytest.approx(
        (
            stack.job.batches_per_s * seconds,
            stack.job.workload_per_s() * seconds,
            stack.job.batch_seconds_per_s * seconds,
        ),
        rel=0.02,
    )


def test_embedded_monitor_agrees_with_prometheus(stack: Stack) -> None:
    now = time.time()
    monitor = stack.monitor()
    try:
        served, scraped = monitor.observe(start_s=now - 6, end_s=now), stack.scraper.observe(start_s=now - 6, end_s=now)
    finally:
        monitor.close()
    assert scraped.time_s == served.time_s and scraped.executor_ids == served.executor_ids
    assert scraped.workload_per_s == pytest.approx(served.workload_per_s, rel=0.02)
    for mine, theirs in zip(scraped.executors, served.executors, strict=True):
        assert mine.throughput_per_s == pytest.approx(theirs.throughput_per_s, rel=0.02)
        assert mine.utilization_ratio == pytest.approx(theirs.utilization_ratio, rel=0.02)
    assert (scraped.scaleout, scraped.consumer_lag_records) == (served.scaleout, served.consumer_lag_records)
    assert (scraped.application_id, scraped.agent_target) == (served.application_id, served.agent_target) != ("", None)
    assert [(p.topic, p.partition) for p in scraped.partitions] == [(p.topic, p.partition) for p in served.partitions]
    assert [p.records_per_s for p in scraped.partitions] == pytest.approx(
        [p.records_per_s for p in served.partitions], rel=0.02
    )
    assert scraped.batches is not None and served.batches is not None
    assert (scraped.batches.batches, scraped.batches.input_records, scraped.batches.duration_s) == pytest.approx(
        (served.batches.batches, served.batches.input_records, served.batches.duration_s), rel=0.02
    )


def test_busy_time_signal_reads_busy_per_core(stack: Stack) -> None:
    now = time.time()
    config = MonitorConfig(prometheus_url=stack.prometheus.url, scrape_interval_s=1, timeout_s=5)
    monitor = PrometheusMonitor(config, "busy_time")
    try:
        obs = monitor.observe(start_s=now - 5, end_s=now)
    finally:
        monitor.close()
    assert obs.executors[0].utilization_ratio[-1] == pytest.approx(stack.job.utilization_ratio(1), rel=0.02)


def test_query_matching_nothing_is_empty(stack: Stack) -> None:
    now = time.time()
    monitor = stack.monitor(query_lag="sum(daedalus_spark_no_such_metric)")
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=now - 10, end_s=now)
    monitor.close()
    assert err.value.kind == "empty" and "lag" in str(err.value)


@pytest.mark.parametrize(
    "override",
    [
        pytest.param(
            {"query_batch_seconds": "sum(rate(daedalus_spark_no_such_metric[5s]))"}, id="one-matching-nothing"
        ),
        pytest.param({"query_batches": "sum(rate("}, id="one-malformed"),
        pytest.param(
            {"query_batch_records": "-sum(rate(daedalus_spark_query_input_records_total[5s]))"}, id="negative"
        ),
        pytest.param({"query_batch_seconds": "sum(rate(daedalus_spark_query_batches_total[5s])) * NaN"}, id="nan"),
    ],
)
def test_unusable_batch_queries_leave_the_window_observed_without_batches(
    stack: Stack, override: dict[str, str]
) -> None:
    now = time.time()
    monitor = stack.monitor(**override)
    try:
        obs = monitor.observe(start_s=now - 6, end_s=now)
    finally:
        monitor.close()
    assert obs.batches is None and obs.scaleout == EXECUTORS and len(obs.workload_per_s) == 6


def test_malformed_promql_is_invalid(stack: Stack) -> None:
    now = time.time()
    monitor = stack.monitor(query_uptime="max(")
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=now - 10, end_s=now)
    monitor.close()
    assert err.value.kind == "invalid"


def test_hanging_server_is_a_timeout() -> None:
    # A listening socket that never accepts: the connection is made, no answer ever comes.
    with socket.socket() as hang:
        hang.bind(("127.0.0.1", 0))
        hang.listen(8)
        config = MonitorConfig(
            prometheus_url=f"http://127.0.0.1:{hang.getsockname()[1]}", scrape_interval_s=1, timeout_s=0.5
        )
        monitor = PrometheusMonitor(config, "cpu")
        started = time.monotonic()
        with pytest.raises(MonitorError) as err:
            monitor.observe(start_s=0, end_s=60)
        monitor.close()
    assert err.value.kind == "timeout"
    assert time.monotonic() - started < 3  # one budget for all queries, not one per query


def test_nan_samples_are_invalid(stack: Stack) -> None:
    monitor = stack.monitor()
    stack.job.nan = True
    try:
        stack.wait_for(
            'daedalus_spark_executor_cpu_seconds_total{executor_id="1"}', lambda r: r and r[0]["value"][1] == "NaN"
        )
        deadline = time.monotonic() + 10
        while True:  # until a step of the window lies after the first NaN scrape
            now = time.time()
            try:
                monitor.observe(start_s=now - 3, end_s=now)
            except MonitorError as err:
                assert err.kind == "invalid", str(err)
                break
            assert time.monotonic() < deadline, "NaN samples never refused"
            time.sleep(0.2)
    finally:
        stack.job.nan = False
        monitor.close()


def test_stopped_server_is_unreachable(stack: Stack) -> None:
    monitor = stack.monitor()
    stack.prometheus.stop()  # the last test of the module: the fixture's stop is idempotent
    now = time.time()
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=now - 10, end_s=now)
    monitor.close()
    assert err.value.kind == "unreachable"
