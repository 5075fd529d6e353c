"""The Prometheus monitor against a real Prometheus server scraping a synthetic job with known rates."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from daedalus_spark.config import MonitorConfig
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from tests.contract.test_monitors import check_known_job
from daedalus_spark.monitor.synthetic import Exporter, SyntheticJob
from daedalus_spark.demo.prometheus_server import BINARY, PrometheusServer

pytestmark = pytest.mark.skipif(not os.access(BINARY, os.X_OK),
                                reason=f"no Prometheus server at {BINARY} (Debian package 'prometheus')")


@pytest.fixture(scope="module")
def served():
    job = SyntheticJob(started_s=time.time() - 1000.0)
    exporter = Exporter(lambda: job.page(time.time())).start()
    target = exporter.url.removeprefix("http://").removesuffix("/metrics")
    try:
        with PrometheusServer([target]) as prometheus:
            yield job, exporter, prometheus
    finally:
        exporter.stop()


def wait_for_window(monitor, seconds: float, timeout_s: float = 45.0):
    """Poll (with a deadline) until Prometheus holds `seconds` of samples plus a rate window before them (rates at
    the very start of a series are extrapolated from fewer points); returns the observation of the last `seconds`."""
    deadline = time.monotonic() + timeout_s
    settled = seconds + monitor.settings.rate_window_s + 2
    while True:
        end = time.time()
        try:
            if len(monitor.observe(start_s=end - settled, end_s=end).workload_per_s) >= settled - 2:
                return monitor.observe(start_s=end - seconds, end_s=end)
        except MonitorError:
            pass
        assert time.monotonic() < deadline, "Prometheus did not collect the samples in time"
        time.sleep(0.5)


def settings(prometheus, **changes) -> MonitorConfig:
    return MonitorConfig(prometheus_url=prometheus.url, rate_window_s=3, **changes)


@pytest.mark.parametrize("signal", ["cpu", "busy_time"])
def test_observation_numbers_match_the_served_job(served, signal):
    job, _, prometheus = served
    obs = wait_for_window(PrometheusMonitor(settings(prometheus), signal), seconds=10)
    check_known_job(obs, job, signal=signal, rel=0.02)
    assert obs.step_s == 1.0 and obs.uptime_s == pytest.approx(1000.0 + (time.time() - obs.time_s), abs=1e3)


def test_a_query_matching_nothing_is_empty(served):
    _, _, prometheus = served
    monitor = PrometheusMonitor(settings(prometheus, query_workload="sum(no_such_metric_anywhere)"), "cpu")
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=time.time() - 10, end_s=time.time())
    assert err.value.kind == "empty"


def test_nan_samples_are_invalid(served):
    _, _, prometheus = served
    zero_limit = "sum by (executor_id) (rate(daedalus_spark_executor_cpu_seconds_total[$rate_window])) / 0"
    monitor = PrometheusMonitor(settings(prometheus, query_cpu=zero_limit), "cpu")
    wait_for_window(PrometheusMonitor(settings(prometheus), "cpu"), seconds=5)  # the data is there
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=time.time() - 5, end_s=time.time())
    assert err.value.kind == "invalid" and "NaN, infinite or negative" in str(err.value)


def test_a_slow_server_times_out(tmp_path: Path):
    with socket.socket() as listener:  # accepts connections and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        accepted: list[socket.socket] = []
        threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        monitor = PrometheusMonitor(MonitorConfig(prometheus_url=url, timeout_s=0.5), "cpu")
        started = time.monotonic()
        with pytest.raises(MonitorError) as err:
            monitor.observe(start_s=time.time() - 10, end_s=time.time())
        assert err.value.kind == "timeout" and time.monotonic() - started < 10
        for conn in accepted:
            conn.close()


def test_a_stopped_server_is_unreachable():
    job = SyntheticJob()
    exporter = Exporter(lambda: job.page(time.time())).start()
    try:
        prometheus = PrometheusServer([exporter.url.removeprefix("http://").removesuffix("/metrics")]).start()
        prometheus.stop()
    finally:
        exporter.stop()
    monitor = PrometheusMonitor(MonitorConfig(prometheus_url=prometheus.url), "cpu")
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=time.time() - 10, end_s=time.time())
    assert err.value.kind == "unreachable"
