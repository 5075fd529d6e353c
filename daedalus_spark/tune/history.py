"""Tuning (I/O edge): the workload history — a trace file, or a range query of the config's workload query on
Prometheus, with its gaps found and reported, never interpolated."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from daedalus_spark.config import Config, parse_config
from daedalus_spark.monitor.files import MAX_METRIC_VALUE, read_trace
from daedalus_spark.tune.grid import with_values
from daedalus_spark.tune.split import HistoryError

MAX_POINTS_PER_QUERY = 10_000  # Prometheus refuses a range query of more than 11,000 points per series
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class History:
    """Records/s per second from `start_unix_s` (0 for a trace); NaN where nothing is known (a gap)."""

    source: str
    start_unix_s: float
    workload_per_s: np.ndarray
    notes: tuple[str, ...] = ()

    def stretches(self) -> list[tuple[int, int]]:
        """The contiguous known seconds, [start, end) by index."""
        return runs(~np.isnan(self.workload_per_s))

    def gaps(self) -> list[tuple[int, int]]:
        return runs(np.isnan(self.workload_per_s))

    @property
    def peak_per_s(self) -> float:
        known = self.workload_per_s[~np.isnan(self.workload_per_s)]
        return float(known.max()) if len(known) else 0.0


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def parse_duration(text: str) -> float:
    """A Prometheus-style duration (`7d`, `36h`, `1d12h`) in seconds."""
    parts = _DURATION.findall(text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"{text[:40]!r} is not a duration like 7d, 36h or 1d12h")
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def from_trace(path: str | Path) -> History:
    """A `second|count` trace (`simulate --trace`'s format): one contiguous stretch."""
    return History(str(path), 0.0, read_trace(path))


def per_second(times_s: np.ndarray, values: np.ndarray, *, start_s: float, end_s: float, step_s: float) -> np.ndarray:
    """Samples of a range query (time -> value at start + k step) as one value per second of [start, end): a sample
    holds for the step ending at it; a step without a sample (or with a value that is not a rate) stays NaN."""
    steps = round((end_s - start_s) / step_s)
    per_step = np.full(steps, np.nan)
    index = np.round((times_s - start_s) / step_s).astype(np.int64) - 1
    ok = (index >= 0) & (index < steps) & np.isfinite(values) & (values >= 0) & (values <= MAX_METRIC_VALUE)
    per_step[index[ok]] = values[ok]
    return np.repeat(per_step, round(step_s))


def trim(workload: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Without the unknown seconds before the first sample and after the last: (series, leading, trailing)."""
    known = np.flatnonzero(~np.isnan(workload))
    if len(known) == 0:
        return workload[:0], len(workload), 0
    return workload[known[0] : known[-1] + 1], int(known[0]), int(len(workload) - 1 - known[-1])


def check_gaps(history: History, max_gap_ratio: float) -> None:
    """Refuse a history missing more than `max_gap_ratio` of its seconds, naming the largest gaps."""
    if len(history.workload_per_s) == 0:
        raise HistoryError(f"history from {history.source}: no samples")
    gaps = history.gaps()
    missing = sum(b - a for a, b in gaps)
    share = missing / len(history.workload_per_s)
    if share > max_gap_ratio:
        worst = sorted(gaps, key=lambda g: g[0] - g[1])[:3]
        listed = ", ".join(f"{b - a} s at +{a} s" for a, b in worst)
        raise HistoryError(
            f"history from {history.source}: {share:.0%} of it is missing ({len(gaps)} gaps, largest {listed}), "
            f"more than history.max_gap_ratio {max_gap_ratio:g}"
        )


def _matrix_values(result: Any, promql: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(result, list) or len(result) > 1:
        count = len(result) if isinstance(result, list) else "no"
        raise HistoryError(f"the workload query gives {count} series, expected one (sum it): {promql}")
    if not result:
        return np.zeros(0), np.zeros(0)
    try:
        pairs = [(float(t), float(v)) for t, v in result[0]["values"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise HistoryError(f"unusable answer from Prometheus to {promql}: {exc}") from None
    return np.asarray([t for t, _ in pairs]), np.asarray([v for _, v in pairs])


def from_prometheus(
    config: Config, *, url: str, since_s: float, step_s: float, now_s: float, environ: Mapping[str, str]
) -> History:
    """The config's workload query (its labels and rate window) over the last `since_s` seconds at `step_s`,
    in chunks Prometheus accepts; leading and trailing seconds without samples are trimmed and said."""
    import requests
    from prometheus_api_client import PrometheusConnect
    from prometheus_api_client.exceptions import PrometheusApiClientException
    from urllib3.util.retry import Retry

    from daedalus_spark.monitor.prometheus import auth_headers, job_labels, queries, session

    monitor = parse_config(with_values(config, {"monitor.prometheus_url": url}), "config").monitor  # checked with it
    try:  # the labels from the environment, the token, the CA file: what `run` would read at start
        promql = queries(monitor, config.controller.utilization_signal, job_labels(monitor, environ))["workload"]
        headers, http = auth_headers(monitor, environ), session(monitor)
    except ValueError as exc:
        raise HistoryError(str(exc)) from None
    end = math.floor(now_s / step_s) * step_s
    kept_s = _retention_s(http, url, headers, monitor.timeout_s)
    early: list[str] = []
    if kept_s is not None and since_s > kept_s:
        early = [f"Prometheus keeps {kept_s / 86400:g} d: the history starts there, not {since_s / 86400:g} d ago"]
        since_s = kept_s
    start = end - math.floor(since_s / step_s) * step_s
    client = PrometheusConnect(
        url=url.rstrip("/"),
        headers=headers or None,
        disable_ssl=not monitor.tls_verify,
        session=http,
        retry=Retry(total=0, read=False),
    )
    times, values = [], []
    chunk = MAX_POINTS_PER_QUERY * step_s
    try:
        for first in np.arange(start + step_s, end + step_s / 2, chunk):
            last = min(first + chunk - step_s, end)
            params = {"start": f"{first:.3f}", "end": f"{last:.3f}", "timeout": f"{monitor.timeout_s:g}s"}
            result = client.custom_query_range(
                promql, start_time=_dt(first), end_time=_dt(last), step=f"{step_s:g}", params=params
            )
            t, v = _matrix_values(result, promql)
            times.append(t)
            values.append(v)
    except requests.ConnectionError as exc:
        raise HistoryError(f"Prometheus at {url} unreachable ({type(exc).__name__})") from None
    except (requests.RequestException, PrometheusApiClientException) as exc:
        raise HistoryError(f"Prometheus at {url}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    series = per_second(np.concatenate(times), np.concatenate(values), start_s=start, end_s=end, step_s=step_s)
    kept, leading, trailing = trim(series)
    notes = early + ([f"no samples in the first {leading} s of --since"] if leading else [])
    notes += [f"no samples in the last {trailing} s"] if trailing else []
    source = f"{url} ({promql})"
    if len(kept) == 0:
        raise HistoryError(f"history from {source}: no samples over the last {since_s:g} s")
    return History(source, start + leading, kept, tuple(notes))


def _retention_s(http: Any, url: str, headers: Mapping[str, str], timeout_s: float) -> float | None:
    """How far back Prometheus keeps samples (its runtime info's storageRetention, e.g. `15d` or `15d or 10GiB`);
    None when it does not say (an older server, a proxy): then --since alone bounds the history."""
    try:
        answer = http.get(f"{url.rstrip('/')}/api/v1/status/runtimeinfo", headers=dict(headers), timeout=timeout_s)
        text = str(answer.json()["data"]["storageRetention"]).split(" or ")[0].strip()
        return parse_duration(text)
    except Exception:  # noqa: BLE001 - whatever the reason, the retention is just not known
        return None


def _dt(t_s: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t_s, tz=UTC)
