"""Monitor: the embedded default for one machine — scrape the agent's and exporter's /metrics, no Prometheus server."""

from __future__ import annotations

import logging
from bisect import bisect_right
import socket
import threading
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark.clock import Clock
from daedalus_spark.config import MonitorConfig
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import RawWindow, Series, assemble
from daedalus_spark.monitor.port import MonitorError

log = logging.getLogger(__name__)
P = "daedalus_spark_"
LATEST_OFFSET, LAG, EXECUTORS, UPTIME = (P + "source_latest_offset", P + "lag_records", P + "executors",
                                         P + "uptime_seconds")
RECORDS, BUSY, CORES = P + "executor_records_processed_total", P + "executor_busy_seconds_total", P + "executor_cores"
CPU, CPU_LIMIT = P + "executor_cpu_seconds_total", P + "executor_cpu_limit_cores"
WANTED = frozenset({LATEST_OFFSET, LAG, EXECUTORS, UPTIME, RECORDS, BUSY, CORES, CPU, CPU_LIMIT})

Labels = tuple[tuple[str, str], ...]
Samples = dict[str, dict[Labels, float]]  # metric sample name -> labels -> value
Fetch = Callable[[str, float], str]


def http_fetch(url: str, timeout_s: float) -> str:
    """GET a /metrics page; failures become MonitorErrors of the right kind."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as response:
            return str(response.read(32 << 20).decode("utf-8", errors="replace"))
    except (TimeoutError, socket.timeout):
        raise MonitorError("timeout", f"{url} took longer than {timeout_s:g} s") from None
    except urllib.error.HTTPError as exc:
        raise MonitorError("invalid", f"{url} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        kind = "timeout" if isinstance(reason, (TimeoutError, socket.timeout)) else "unreachable"
        raise MonitorError(kind, f"{url} unreachable: {reason}") from None


def parse(text: str) -> Samples:
    """The samples of the metrics we use; anything else on the page is ignored."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in WANTED:
                out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = float(sample.value)
    return out


@dataclass
class ScrapeMonitor:
    """Scrapes every `step_s` on a thread of its own and keeps `retention_s` of rounds; `observe` computes what the
    default PromQL queries would (rates over `rate_window_s`, counter resets handled) at each round's time."""

    settings: MonitorConfig
    utilization_signal: str
    clock: Clock
    retention_s: float = 600.0
    fetch: Fetch = http_fetch
    _rounds: deque[tuple[float, Samples]] = field(default_factory=deque)
    _last_error: MonitorError | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> ScrapeMonitor:
        self._thread = threading.Thread(target=self._run, name="daedalus-scrape", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.scrape_once()
            self._stop.wait(self.settings.step_s)

    def scrape_once(self) -> None:
        """One round over every URL, stamped with one time; a failed URL leaves its metrics out of the round."""
        now = self.clock.now()
        samples: Samples = {}
        error = None
        for url in self.settings.scrape_urls:
            try:
                for name, values in parse(self.fetch(url, self.settings.timeout_s)).items():
                    samples.setdefault(name, {}).update(values)
            except MonitorError as exc:
                error = exc
            except ValueError as exc:  # the page is not Prometheus text
                error = MonitorError("invalid", f"{url}: not Prometheus text format: {exc}")
        with self._lock:
            self._last_error = error
            self._rounds.append((now, samples))
            while self._rounds and self._rounds[0][0] < now - self.retention_s:
                self._rounds.popleft()

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        with self._lock:
            rounds = list(self._rounds)
            error = self._last_error
        inside = [i for i, (t, _) in enumerate(rounds) if start_s < t <= end_s]
        if error is not None and (not inside or not rounds[inside[-1]][1]):
            raise error  # the latest round failed: say why rather than "no data"
        if not inside:
            raise MonitorError("empty", f"no scrape in ({start_s:.0f}, {end_s:.0f}] of {self.settings.scrape_urls}")
        window = _Window(rounds, self.settings.rate_window_s)
        last = rounds[inside[-1]][1]
        by = self.settings.executor_label
        cpu = self.utilization_signal == "cpu"
        raw = RawWindow(
            end_s=end_s, step_s=self.settings.step_s,
            workload=window.summed_rate(LATEST_OFFSET, inside),
            throughput=window.rates_by(RECORDS, by, inside),
            utilization=window.ratios_by(CPU if cpu else BUSY, CPU_LIMIT if cpu else CORES, by, inside),
            lag_records=_total(last.get(LAG)),
            executors=_total(last.get(EXECUTORS)),
            uptime_s=max(last[UPTIME].values()) if last.get(UPTIME) else None,
        )
        return assemble(raw)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.settings.timeout_s * max(1, len(self.settings.scrape_urls)) + 1)


def _total(values: dict[Labels, float] | None) -> float | None:
    return sum(values.values()) if values else None


@dataclass
class _Window:
    rounds: list[tuple[float, Samples]]
    rate_window_s: float

    def __post_init__(self) -> None:
        self.times = [t for t, _ in self.rounds]

    def _base(self, i: int) -> int | None:
        """The latest round at least a rate window before round i (the first round if none is that old)."""
        if i == 0:
            return None
        return max(0, min(i - 1, bisect_right(self.times, self.times[i] - self.rate_window_s) - 1))

    def _rate(self, name: str, labels: Labels, i: int) -> float | None:
        j = self._base(i)
        if j is None:
            return None
        (t1, now), (t0, then) = self.rounds[i], self.rounds[j]
        v1, v0 = now.get(name, {}).get(labels), then.get(name, {}).get(labels)
        if v1 is None or v0 is None or t1 <= t0:
            return None
        return (v1 if v1 < v0 else v1 - v0) / (t1 - t0)  # a counter that went down was reset (restart)

    def summed_rate(self, name: str, inside: Iterable[int]) -> Series:
        out: dict[float, float] = {}
        for i in inside:
            keys = self.rounds[i][1].get(name, {})
            rates = [self._rate(name, k, i) for k in keys]
            if rates and all(r is not None for r in rates):
                out[self.rounds[i][0]] = sum(r for r in rates if r is not None)
        return out

    def rates_by(self, name: str, label: str, inside: Iterable[int]) -> dict[str, Series]:
        out: dict[str, dict[float, float]] = {}
        for i in inside:
            t, samples = self.rounds[i]
            for labels in samples.get(name, {}):
                rate = self._rate(name, labels, i)
                key = dict(labels).get(label)
                if rate is not None and key is not None:
                    out.setdefault(key, {})[t] = rate
        return out

    def ratios_by(self, counter: str, gauge: str, label: str, inside: Iterable[int]) -> dict[str, Series]:
        """rate(counter) / gauge per label value, where both exist (`/ on (executor_id)` in PromQL)."""
        rates = self.rates_by(counter, label, inside)
        out: dict[str, dict[float, float]] = {}
        for i in inside:
            t, samples = self.rounds[i]
            for labels, limit in samples.get(gauge, {}).items():
                key = dict(labels).get(label)
                if key is not None and t in rates.get(key, {}):
                    out.setdefault(key, {})[t] = rates[key][t] / limit if limit > 0 else float("nan")
        return out
