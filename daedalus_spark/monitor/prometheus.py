"""Monitor: read one window from Prometheus with range queries (prometheus-api-client), the production path."""

from __future__ import annotations

from datetime import UTC, datetime
from string import Template
from typing import Any

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from urllib3.util.retry import Retry

from daedalus_spark.config import MonitorConfig
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import RawWindow, Series, assemble
from daedalus_spark.monitor.port import MonitorError


def promql_duration(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


def render(template: str, settings: MonitorConfig) -> str:
    """A query template with `$rate_window` filled in."""
    return Template(template).safe_substitute(rate_window=promql_duration(settings.rate_window_s))


class PrometheusMonitor:
    """Range queries over (start, end] at the configured step; all quantities are evaluated at the same timestamps,
    so throughput and utilization of a sample always cover the same window."""

    def __init__(self, settings: MonitorConfig, utilization_signal: str) -> None:
        self.settings = settings
        # No retries inside a tick: a down server must fail the tick fast; the next tick tries again.
        self.client = PrometheusConnect(settings.prometheus_url, disable_ssl=True, retry=Retry(total=0, read=False),
                                        timeout=settings.timeout_s)
        self.utilization_query = settings.query_cpu if utilization_signal == "cpu" else settings.query_busy

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        s, label = self.settings, self.settings.executor_label
        first_s = start_s + s.step_s
        if first_s > end_s:
            raise MonitorError("empty", f"window ({start_s}, {end_s}] is shorter than one step of {s.step_s} s")
        query = lambda template: self._range(template, first_s, end_s)  # noqa: E731
        raw = RawWindow(
            end_s=end_s, step_s=s.step_s,
            workload=_single(query(s.query_workload), "query_workload"),
            throughput=_by_label(query(s.query_throughput), label, "query_throughput"),
            utilization=_by_label(query(self.utilization_query), label, "utilization query"),
            lag_records=_last(query(s.query_lag)),
            executors=_last(query(s.query_executors)),
            uptime_s=_last(query(s.query_uptime)),
        )
        return assemble(raw)

    def _range(self, template: str, first_s: float, end_s: float) -> list[dict[str, Any]]:
        query = render(template, self.settings)
        try:
            return list(self.client.custom_query_range(
                query, start_time=datetime.fromtimestamp(first_s, UTC), end_time=datetime.fromtimestamp(end_s, UTC),
                step=promql_duration(self.settings.step_s)))
        except requests.Timeout:
            raise MonitorError("timeout", f"Prometheus at {self.settings.prometheus_url} took longer than "
                                          f"{self.settings.timeout_s:g} s for: {query}") from None
        except requests.ConnectionError as exc:
            raise MonitorError("unreachable", f"Prometheus at {self.settings.prometheus_url} unreachable: "
                                              f"{type(exc).__name__}") from None
        except (PrometheusApiClientException, requests.RequestException, ValueError) as exc:
            raise MonitorError("invalid", f"Prometheus refused or garbled {query}: {exc}"[:500]) from None

    def close(self) -> None:
        self.client._session.close()


def _series(result: dict[str, Any]) -> Series:
    values = result.get("values") or []
    try:
        return {float(t): float(v) for t, v in values}
    except (TypeError, ValueError):
        raise MonitorError("invalid", f"non-numeric samples in {result.get('metric')}") from None


def _single(results: list[dict[str, Any]], what: str) -> Series:
    if len(results) > 1:
        raise MonitorError("invalid", f"{what} returned {len(results)} series; it must aggregate to one (sum(...))")
    return _series(results[0]) if results else {}


def _by_label(results: list[dict[str, Any]], label: str, what: str) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for result in results:
        executor = (result.get("metric") or {}).get(label)
        if executor is None:
            raise MonitorError("invalid", f"{what} returned a series without the label {label!r}")
        out[str(executor)] = _series(result)
    return out


def _last(results: list[dict[str, Any]]) -> float | None:
    series = _single(results, "a scalar query")
    return series[max(series)] if series else None
