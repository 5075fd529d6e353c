"""Monitor: turns the outside world into one Observation per tick (Prometheus, direct scrapes, files; built by
runtime/wiring.py)."""

from __future__ import annotations

from daedalus_spark.monitor.port import MetricsSource, MonitorError

__all__ = ["MetricsSource", "MonitorError"]
