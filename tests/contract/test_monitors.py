"""Monitor contract: a known job gives the right Observation; faults give the right MonitorError kind.

Run here over the embedded scraper (fake fetch and clock); the Prometheus monitor runs the same checks against a
real Prometheus server in tests/integration/test_prometheus_server.py.
"""

from __future__ import annotations

import math

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import MonitorConfig
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import RawWindow, assemble
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.scrape import ScrapeMonitor
from daedalus_spark.monitor.synthetic import SyntheticJob

URL = "http://agent/metrics"


def check_known_job(obs: Observation, job: SyntheticJob, *, signal: str, rel: float) -> None:
    """The numbers of a SyntheticJob, as every monitor must report them."""
    assert obs.scaleout == len(job.throughput) and obs.worker_ids == tuple(str(i) for i in range(obs.scaleout))
    assert all(w == pytest.approx(job.workload_per_s, rel=rel) for w in obs.workload_per_s)
    expected_util = job.cpu if signal == "cpu" else job.busy
    for i, worker in enumerate(obs.workers):
        assert len(worker.throughput_per_s) == len(obs.workload_per_s)  # aligned on the same timestamps
        assert worker.throughput_per_s == pytest.approx([job.throughput[i]] * len(obs.workload_per_s), rel=rel)
        assert worker.utilization_ratio == pytest.approx([expected_util[i]] * len(obs.workload_per_s), rel=rel)
    assert obs.consumer_lag_records == job.lag_records


def scraped(job: SyntheticJob, *, seconds: int = 60, signal: str = "cpu", page=None, **settings):
    clock = FakeClock(0.0)
    monitor = ScrapeMonitor(MonitorConfig(scrape_urls=[URL], **settings), signal, clock, retention_s=600,
                            fetch=lambda url, timeout: (page or job.page)(clock.now()))
    for _ in range(seconds):
        clock.advance(1.0)
        monitor.scrape_once()
    return monitor, clock


@pytest.mark.parametrize("signal", ["cpu", "busy_time"])
def test_scraper_reports_the_known_job(signal):
    job = SyntheticJob()
    monitor, clock = scraped(job, signal=signal)
    obs = monitor.observe(start_s=0.0, end_s=clock.now())
    check_known_job(obs, job, signal=signal, rel=1e-9)
    assert len(obs.workload_per_s) == 59  # the first scrape has nothing before it to take a rate from
    assert obs.time_s == 60.0 and obs.uptime_s == 60.0


def test_scraper_window_is_half_open_and_follows_the_loop():
    monitor, _ = scraped(SyntheticJob())
    obs = monitor.observe(start_s=30.0, end_s=45.0)
    assert len(obs.workload_per_s) == 15 and obs.time_s == 45.0


def test_scraper_handles_a_counter_reset():
    job = SyntheticJob()
    monitor, clock = scraped(job, seconds=30)
    job.started_s = 30.0  # the job restarted: every counter begins again from 0
    for _ in range(30):
        clock.advance(1.0)
        monitor.scrape_once()
    obs = monitor.observe(start_s=35.0, end_s=60.0)
    check_known_job(obs, job, signal="cpu", rel=1e-9)


def test_executors_that_left_are_not_workers():
    job = SyntheticJob(extra_executor_ids=("7",))
    monitor, clock = scraped(job)
    assert monitor.observe(start_s=0.0, end_s=clock.now()).worker_ids == ("0", "1")


@pytest.mark.parametrize(
    "page,kind",
    [
        pytest.param(lambda t: "", "empty", id="empty-page"),
        pytest.param(lambda t: SyntheticJob(cpu_limit_cores=0.0).page(t), "invalid", id="nan-cpu"),
        pytest.param(lambda t: "this is { not prometheus", "invalid", id="garbage"),
        pytest.param(lambda t: SyntheticJob().page(t).replace("daedalus_spark_executors 2", "daedalus_spark_executors 3"),
                     "partial", id="fewer-series-than-executors"),
        pytest.param(lambda t: "\n".join(l for l in SyntheticJob().page(t).splitlines() if "cpu" not in l),
                     "empty", id="cpu-exporter-missing"),
    ],
)
def test_scraper_faults(page, kind):
    monitor, clock = scraped(SyntheticJob(), page=page)
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=0.0, end_s=clock.now())
    assert err.value.kind == kind


@pytest.mark.parametrize("kind", ["unreachable", "timeout"])
def test_scraper_reports_why_the_latest_scrape_failed(kind):
    job = SyntheticJob()
    failing = False

    def page(t):
        if failing:
            raise MonitorError(kind, f"agent {kind}")
        return job.page(t)

    monitor, clock = scraped(job, page=page)
    failing = True
    clock.advance(1.0)
    monitor.scrape_once()
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=60.0, end_s=clock.now())
    assert err.value.kind == kind


def test_scraper_thread_starts_and_stops():
    job = SyntheticJob()
    clock = FakeClock(0.0)
    monitor = ScrapeMonitor(MonitorConfig(scrape_urls=[URL], step_s=0.1), "cpu", clock,
                            fetch=lambda url, timeout: job.page(clock.advance(1.0))).start()
    monitor.close()
    assert monitor._thread is not None and not monitor._thread.is_alive()


def raw(**changes):
    base = dict(end_s=3.0, step_s=1.0, workload={1.0: 10.0, 2.0: 10.0, 3.0: 10.0},
                throughput={"a": {1.0: 5.0, 2.0: 5.0, 3.0: 5.0}}, utilization={"a": {1.0: 0.5, 2.0: 0.5, 3.0: 0.5}},
                lag_records=0.0, executors=1.0, uptime_s=100.0)
    return RawWindow(**{**base, **changes})


@pytest.mark.parametrize(
    "window,kind,text",
    [
        pytest.param(raw(workload={}), "empty", "no workload", id="no-workload"),
        pytest.param(raw(executors=None), "empty", "no executors", id="no-executor-count"),
        pytest.param(raw(executors=1.5), "invalid", "not a positive count", id="fractional-executors"),
        pytest.param(raw(utilization={}), "empty", "utilization", id="no-utilization"),
        pytest.param(raw(lag_records=math.nan), "invalid", "consumer lag", id="nan-lag"),
        pytest.param(raw(uptime_s=-1.0), "invalid", "uptime", id="negative-uptime"),
        pytest.param(raw(workload={1.0: 10.0, 2.0: -1.0, 3.0: 10.0}), "invalid", "workload", id="negative-workload"),
        pytest.param(raw(throughput={"a": {1.0: 5.0, 2.0: math.inf, 3.0: 5.0}}), "invalid", "throughput of executor a",
                     id="infinite-throughput"),
        pytest.param(raw(executors=2.0), "partial", "for 1 executors", id="missing-executor"),
        pytest.param(raw(throughput={"a": {1.0: 5.0, 2.0: 5.0}}), "partial", "for 0 executors",
                     id="series-ends-early"),
    ],
)
def test_assemble_refuses_what_must_not_be_scaled_on(window, kind, text):
    with pytest.raises(MonitorError) as err:
        assemble(window)
    assert err.value.kind == kind and text in str(err.value)


def test_assemble_keeps_only_the_timestamps_every_series_has():
    window = raw(workload={1.0: 9.0, 2.0: 10.0, 3.0: 11.0}, throughput={"a": {1.0: 4.0, 3.0: 6.0}},
                 utilization={"a": {2.0: 0.4, 3.0: 0.6}})
    obs = assemble(window)
    assert obs.workload_per_s == (11.0,) and obs.workers[0].throughput_per_s == (6.0,)
    assert obs.workers[0].utilization_ratio == (0.6,) and obs.time_s == 3.0
