"""Monitor (one machine, no server): scrape the agent's /metrics each step and compute the default queries itself."""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import requests
import urllib3
from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark import metricnames as names
from daedalus_spark.clock import Clock
from daedalus_spark.config import MonitorConfig
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import APPLICATION_LABEL, Window, build_observation
from daedalus_spark.monitor.port import MonitorError

log = logging.getLogger(__name__)

OFFSETS = names.total(names.SOURCE_LATEST_OFFSET)
RECORDS = names.total(names.EXECUTOR_RECORDS)
BUSY, CORES = names.total(names.EXECUTOR_BUSY_SECONDS), names.EXECUTOR_CORES
CPU, CPU_LIMIT = names.total(names.EXECUTOR_CPU_SECONDS), names.EXECUTOR_CPU_LIMIT_CORES
LAG, EXECUTORS, UPTIME = names.LAG_RECORDS, names.EXECUTORS, names.UPTIME_SECONDS
TARGET = names.EXECUTORS_TARGET
BATCH_COUNTERS = {  # assemble.BATCH_QUERIES -> the agent's query progress counter each one is the rate of
    "batches": names.total(names.QUERY_BATCHES),
    "batch_records": names.total(names.QUERY_INPUT_RECORDS),
    "batch_seconds": names.total(names.QUERY_BATCH_SECONDS),
}
LABEL = "executor_id"
LOOKBACK_S = 300.0  # Prometheus's default: an instant value older than this is gone

Fetch = Callable[[str, float], str]  # (url, timeout_s) -> exposition text; raises MonitorError
SeriesKey = tuple[str, str, tuple[tuple[str, str], ...]]  # (url, metric name, sorted labels)
Series = tuple[list[float], list[float | None]]  # sample times and values (None: stale)
SeriesAt = Callable[[Series, float], float | None]
STALE = None  # Prometheus's staleness marker: the series vanished from its target's latest scrape


# Largest scrape body read: an agent's /metrics is tens of kB, a node exporter's a few MB; beyond this the target is
# broken or hostile (200 MB once took the controller to 1.24 GB), and the scrape fails instead.
MAX_SCRAPE_BYTES = 32 * 1024 * 1024
_CHUNK_BYTES = 64 * 1024


def http_fetch(url: str, timeout_s: float) -> str:
    """The target's exposition text, read within one deadline of `timeout_s` for the whole answer (a target that
    trickles a byte at a time fails like a silent one) and at most MAX_SCRAPE_BYTES."""
    deadline = time.monotonic() + timeout_s
    try:
        with requests.get(url, timeout=timeout_s, stream=True) as response:
            if response.status_code != 200:
                raise MonitorError("unreachable", f"scrape of {url}: HTTP {response.status_code}")
            body = _read_before(response.raw, deadline, url, timeout_s)
            encoding = response.encoding or "utf-8"
    except (requests.Timeout, urllib3.exceptions.TimeoutError):
        raise MonitorError("timeout", f"scrape of {url} took longer than {timeout_s} s") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
        raise MonitorError("unreachable", f"cannot scrape {url}: {type(exc).__name__}") from None
    return body.decode(encoding, errors="replace")


def _read_before(raw: urllib3.BaseHTTPResponse, deadline: float, url: str, timeout_s: float) -> bytes:
    """Read the body a chunk at a time (one receive each), each wait bounded by what is left of the deadline."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 0:
            raise MonitorError("timeout", f"scrape of {url} took longer than {timeout_s} s (the whole answer)")
        connection = getattr(raw, "connection", None)
        if connection is not None and connection.sock is not None:
            connection.sock.settimeout(remaining_s)
        chunk = raw.read1(_CHUNK_BYTES, decode_content=True)  # gzip: the size bound counts the decoded text
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_SCRAPE_BYTES:
            raise MonitorError(
                "invalid", f"scrape of {url}: the answer is larger than {MAX_SCRAPE_BYTES // (1024 * 1024)} MiB"
            )
        chunks.append(chunk)


@dataclass
class _Series:
    times_s: deque[float]
    values: deque[float | None]


@dataclass
class ScrapeMonitor:
    """MetricsSource that is its own tiny Prometheus for the default metric names (custom PromQL needs a server).

    `scrape_once` takes one sample of every scrape URL at `clock.now()`; `start` runs it every `step_s` in a
    thread. Rates follow PromQL's rate(): the increase (counter resets count from zero) between the first and the
    last sample inside (t - rate window, t], divided by their distance.
    """

    config: MonitorConfig
    utilization_signal: str
    clock: Clock
    fetch: Fetch = http_fetch
    horizon_s: float = 600.0  # samples older than this are forgotten (the longest window the loop asks for)
    _series: dict[SeriesKey, _Series] = field(default_factory=dict, init=False)
    _errors: dict[str, MonitorError | None] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._wanted = {OFFSETS, RECORDS, LAG, EXECUTORS, UPTIME, TARGET, *BATCH_COUNTERS.values()}
        self._wanted |= {CPU, CPU_LIMIT} if self.utilization_signal == "cpu" else {BUSY, CORES}
        self._maxlen = math.ceil((self.horizon_s + self.config.rate_window_s) / self.config.step_s) + 4

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="daedalus-scrape", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            # A scrape under way ends by its own deadline; the daemon thread is not waited for beyond a moment, so a
            # stop is prompt even when a target trickles its answer.
            self._thread.join(timeout=min(1.0, self.config.timeout_s))
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            started = self.clock.now()
            try:
                self.scrape_once()
            except Exception:  # a bug in one scrape must not end monitoring
                log.exception("scrape failed")
            self._stop.wait(max(0.0, self.config.step_s - (self.clock.now() - started)))

    def scrape_once(self) -> None:
        for url in self.config.scrape_urls:
            t_s = self.clock.now()
            try:
                samples = list(self._parse(url, self.fetch(url, self.config.timeout_s)))
            except MonitorError as exc:
                with self._lock:
                    self._errors[url] = exc
                    self._mark_stale(url, t_s, keep=set())
                continue
            with self._lock:
                self._errors[url] = None
                self._record(url, t_s, samples)

    def _parse(self, url: str, text: str) -> Iterable[tuple[str, tuple[tuple[str, str], ...], float]]:
        try:
            families = list(text_string_to_metric_families(text))
        except (ValueError, TypeError, IndexError) as exc:
            raise MonitorError("invalid", f"{url}: not the Prometheus text format ({exc})") from None
        for family in families:
            for sample in family.samples:
                if sample.name in self._wanted:
                    yield sample.name, tuple(sorted(sample.labels.items())), float(sample.value)

    def _record(self, url: str, t_s: float, samples: list[tuple[str, tuple[tuple[str, str], ...], float]]) -> None:
        seen = set()
        for name, labels, value in samples:
            key = (url, name, labels)
            seen.add(key)
            self._append(key, t_s, value)
        self._mark_stale(url, t_s, keep=seen)
        horizon = t_s - self.horizon_s - self.config.rate_window_s
        for key in [k for k, s in self._series.items() if s.times_s[-1] < horizon]:
            del self._series[key]  # executors that left long ago: keeps memory bounded

    def _append(self, key: SeriesKey, t_s: float, value: float | None) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series(deque(maxlen=self._maxlen), deque(maxlen=self._maxlen))
        series.times_s.append(t_s)
        series.values.append(value)

    def _mark_stale(self, url: str, t_s: float, keep: set[SeriesKey]) -> None:
        for key, series in self._series.items():
            if key[0] == url and key not in keep and series.values[-1] is not STALE:
                self._append(key, t_s, STALE)

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        window = Window(start_s, end_s, self.config.step_s)
        if window.last_index < window.first_index:
            raise MonitorError("empty", f"window ({start_s}, {end_s}] holds no {self.config.step_s}-s step")
        with self._lock:
            failed = [e for e in self._errors.values() if e is not None]
            snapshot = {k: (list(s.times_s), list(s.values)) for k, s in self._series.items()}
        if failed:
            raise failed[0]
        if not self._errors:
            raise MonitorError("empty", "nothing scraped yet")
        results = _Evaluator(snapshot, self.config.rate_window_s).results(window, self.utilization_signal)
        return build_observation(results, window, executor_label=LABEL)


@dataclass
class _Evaluator:
    """The default queries over a snapshot of the ring buffers, one value per grid time."""

    series: dict[SeriesKey, tuple[list[float], list[float | None]]]
    rate_window_s: float

    def __post_init__(self) -> None:
        self._index: dict[tuple[str, str | None], list[tuple[list[float], list[float | None]]]] = {}
        for (_, name, labels), s in self.series.items():
            self._index.setdefault((name, None), []).append(s)
            executor = dict(labels).get(LABEL)
            if executor is not None:
                self._index.setdefault((name, executor), []).append(s)

    def results(self, window: Window, signal: str) -> dict[str, list[dict[str, Any]]]:
        times = window.times_s()
        counter, limit = (CPU, CPU_LIMIT) if signal == "cpu" else (BUSY, CORES)
        executors = sorted({dict(k[2]).get(LABEL, "") for k in self.series if k[1] in (RECORDS, counter)} - {""})
        return {
            "workload": self._scalar(times, lambda t: self._sum(OFFSETS, t, self._rate)),
            "throughput": [self._matrix(e, times, partial(self._sum_at, RECORDS, e)) for e in executors],
            "utilization": [self._matrix(e, times, partial(self._ratio_at, counter, limit, e)) for e in executors],
            "lag": self._scalar(times, lambda t: self._sum(LAG, t, self._instant)),
            "executors": self._scalar(times, lambda t: self._sum(EXECUTORS, t, self._instant)),
            "uptime": self._scalar(times, lambda t: self._max(UPTIME, t)),
            "partitions": self._by_partition(OFFSETS, times),
            "application": self._by_application(UPTIME, times),
            "agent_target": self._scalar(times, self._agent_target),
        } | {
            query: self._scalar(times, partial(self._total_rate, counter)) for query, counter in BATCH_COUNTERS.items()
        }

    def _by_partition(self, name: str, times: list[float]) -> list[dict[str, Any]]:
        """sum by (topic, partition) (rate(name)): one matrix entry per source partition."""
        groups: dict[tuple[str, str], list[tuple[list[float], list[float | None]]]] = {}
        for (_, series_name, labels), s in self.series.items():
            tags = dict(labels)
            if series_name == name and "topic" in tags and "partition" in tags:
                groups.setdefault((tags["topic"], tags["partition"]), []).append(s)
        out = []
        for (topic, partition), members in sorted(groups.items()):
            rates = [(t, [r for s in members if (r := self._rate(s, t)) is not None]) for t in times]
            values = [[t, sum(rs)] for t, rs in rates if rs]
            if values:
                out.append({"metric": {"topic": topic, "partition": partition}, "values": values})
        return out

    def _by_application(self, name: str, times: list[float]) -> list[dict[str, Any]]:
        """max by (application_id) (name): one matrix entry per application, while its series is not stale."""
        out = []
        for (_, series_name, labels), s in sorted(self.series.items()):
            application = dict(labels).get(APPLICATION_LABEL)
            if series_name == name and application is not None:
                values = [[t, v] for t in times if (v := self._instant(s, t)) is not None]
                out.append({"metric": {APPLICATION_LABEL: application}, "values": values})
        return out

    def _agent_target(self, t: float) -> float | None:
        """max(target): no sample before the agent's first target."""
        values = [v for s in self._matching(TARGET, None) if (v := self._instant(s, t)) is not None]
        return max(values) if values else None

    def _scalar(self, times: list[float], value: Callable[[float], float | None]) -> list[dict[str, Any]]:
        values = [[t, v] for t in times if (v := value(t)) is not None]
        return [{"metric": {}, "values": values}] if values else []

    def _matrix(self, executor: str, times: list[float], value: Callable[[float], float | None]) -> dict[str, Any]:
        return {"metric": {LABEL: executor}, "values": [[t, v] for t in times if (v := value(t)) is not None]}

    def _matching(self, name: str, executor: str | None) -> list[tuple[list[float], list[float | None]]]:
        return self._index.get((name, executor), [])

    def _total_rate(self, name: str, t: float) -> float | None:
        """sum(rate(name)) over every series of the name (the batch counters: one per query)."""
        return self._sum(name, t, self._rate)

    def _sum_at(self, name: str, executor: str, t: float) -> float | None:
        return self._sum(name, t, self._rate, executor)

    def _ratio_at(self, counter: str, limit: str, executor: str, t: float) -> float | None:
        return self._ratio(counter, limit, t, executor)

    def _sum(self, name: str, t: float, fn: SeriesAt, executor: str | None = None) -> float | None:
        values = [v for s in self._matching(name, executor) if (v := fn(s, t)) is not None]
        return sum(values) if values else None

    def _max(self, name: str, t: float) -> float | None:
        values = [v for s in self._matching(name, None) if (v := self._instant(s, t)) is not None]
        return max(values) if values else None

    def _ratio(self, counter: str, limit: str, t: float, executor: str) -> float | None:
        used = self._sum(counter, t, self._rate, executor)
        cores = self._sum(limit, t, self._instant, executor)
        if used is None or cores is None:
            return None
        return used / cores if cores > 0 else math.nan  # a zero limit is invalid data, not a missing sample

    def _rate(self, series: tuple[list[float], list[float | None]], t: float) -> float | None:
        times, values = series
        lo, hi = bisect.bisect_right(times, t - self.rate_window_s), bisect.bisect_right(times, t)
        points = [(ts, v) for ts, v in zip(times[lo:hi], values[lo:hi], strict=True) if v is not STALE]
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            return None
        increase = 0.0
        for (_, before), (_, after) in itertools.pairwise(points):
            increase += after - before if after >= before else after  # a reset restarts the counter at zero
        return increase / (points[-1][0] - points[0][0])

    def _instant(self, series: tuple[list[float], list[float | None]], t: float) -> float | None:
        times, values = series
        i = bisect.bisect_right(times, t) - 1
        if i < 0 or times[i] < t - LOOKBACK_S:
            return None
        return values[i]
