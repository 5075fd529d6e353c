"""Monitor: turns the outside world into one Observation per tick — Prometheus, an embedded scraper, or files."""

from __future__ import annotations

from daedalus_spark.clock import Clock
from daedalus_spark.config import Config
from daedalus_spark.monitor.port import MetricsSource


def make_monitor(config: Config, clock: Clock) -> MetricsSource:
    """Prometheus when `monitor.prometheus_url` is set, else the embedded scraper (started here)."""
    signal = config.controller.utilization_signal
    if config.monitor.prometheus_url:
        from daedalus_spark.monitor.prometheus import PrometheusMonitor

        return PrometheusMonitor(config.monitor, signal)
    from daedalus_spark.monitor.scrape import ScrapeMonitor

    retention_s = 6 * config.controller.loop_interval_s + config.monitor.rate_window_s
    return ScrapeMonitor(config.monitor, signal, clock, retention_s=retention_s).start()
