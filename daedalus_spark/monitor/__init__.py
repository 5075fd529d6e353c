"""Monitor: turns the outside world into one Observation per tick (Prometheus, direct scrapes, files)."""

from __future__ import annotations

from collections.abc import Mapping

from daedalus_spark.clock import Clock
from daedalus_spark.config import Config
from daedalus_spark.monitor.port import MAX_WINDOW_INTERVALS, MetricsSource, MonitorError

__all__ = ["MetricsSource", "MonitorError", "make_monitor"]


def make_monitor(config: Config, clock: Clock, environ: Mapping[str, str] | None = None) -> MetricsSource:
    """A PrometheusMonitor when `monitor.prometheus_url` is set (job labels and token from `environ`), else a
    started ScrapeMonitor of `scrape_urls`."""
    signal = config.controller.utilization_signal
    if config.monitor.prometheus_url:
        from daedalus_spark.monitor.prometheus import PrometheusMonitor

        return PrometheusMonitor(config.monitor, signal, environ)
    from daedalus_spark.monitor.scrape import ScrapeMonitor

    horizon_s = MAX_WINDOW_INTERVALS * config.controller.loop_interval_s + config.monitor.step_s
    monitor = ScrapeMonitor(config.monitor, signal, clock, horizon_s=horizon_s)
    monitor.start()
    return monitor
