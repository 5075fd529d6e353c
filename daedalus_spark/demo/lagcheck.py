"""Demo (Kafka): checks the monitor's lag source while the demo runs — kafka-exporter's lag as Prometheus holds it
against the lag computed from the broker's own offsets at the moment of that scrape, within one batch's records.

One batch's records are what the largest batch of the last 30 s read (a commit between the two readings moves the
committed offset by one batch, and the batch that works off a rescale's backlog is larger than the average), and at
least what one trigger interval brings at the produce rate then: through a stall no batch completes, yet the batch
that follows reads at least that much, and the exporter's and the broker's readings of a log that grows by thousands
a second differ by what arrived between them.

The broker is read every second, and the exported value is compared with the broker's lag interpolated to the
scrape's own timestamp (Prometheus's `timestamp()`), not with a reading taken up to a scrape interval later: between
the two a batch may commit, or a few seconds of records arrive, and a gap of that kind says nothing about the
exporter."""

from __future__ import annotations

import bisect
import contextlib
import json
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark import metricnames as names
from daedalus_spark.kafkacluster.offsets import BrokerOffsets

# Records per batch over each 5-s window (a ratio of two increases over the same samples, so their extrapolation
# cancels; a catch-up batch takes longer than 5 s, so such a window holds one), the largest of the last 30 s.
_BATCH = (
    f"max_over_time((sum(increase({names.total(names.QUERY_INPUT_RECORDS)}[5s])) / "
    f"clamp_min(sum(increase({names.total(names.QUERY_BATCHES)}[5s])), 1))[30s:1s])"
)


_PRODUCED = 'sum(rate(kafka_topic_partition_current_offset{{topic="{topic}"}}[30s]))'


@dataclass(frozen=True)
class LagSample:
    t_s: float
    exported: float  # sum of kafka_consumergroup_lag in Prometheus (its last scrape)
    broker: float  # sum over partitions of log-end minus committed, from the broker, at the scrape's time
    batch_records: float  # records the largest batch of the last 30 s read
    trigger_records: float = 0.0  # records one trigger interval brings at the produce rate of the last 30 s

    @property
    def bound(self) -> float:
        """One batch's records: the batches' average, at least one trigger interval's records, at least one."""
        return max(self.batch_records, self.trigger_records, 1.0)

    @property
    def within(self) -> bool:
        return abs(self.exported - self.broker) <= self.bound


@dataclass
class LagCheck:
    """Every `period_s`, one LagSample; a sample Prometheus or the broker could not give is counted as missing."""

    prometheus_url: str
    offsets: BrokerOffsets
    topic: str
    group: str
    trigger_s: float = 1.0
    period_s: float = 5.0
    samples: list[LagSample] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)  # samples not taken, by what was lacking
    _stop: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)

    def start(self) -> LagCheck:
        threading.Thread(target=self._run, name="demo-lag-check", daemon=True).start()
        return self

    def _query(self, promql: str) -> float | None:
        url = f"{self.prometheus_url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - loopback
            result = json.load(r)["data"]["result"]
        return float(result[0]["value"][1]) if result else None

    def _run(self) -> None:
        selector = f'consumergroup="{self.group}",topic="{self.topic}"'
        readings = BrokerReadings()
        next_check = time.time() + self.period_s
        while not self._stop.wait(1.0):
            self._read_broker(readings)
            if time.time() < next_check:
                continue
            next_check = time.time() + self.period_s
            try:
                exported = self._query(f"sum(kafka_consumergroup_lag{{{selector}}})")
                scraped_s = self._query(f"max(timestamp(kafka_consumergroup_lag{{{selector}}}))")
                batch = self._query(_BATCH)
                produced = self._query(_PRODUCED.format(topic=self.topic))
                self._read_broker(readings)  # after the query: the scrape it returned lies between two readings
            except Exception:  # noqa: BLE001 - a busy moment: counted as missing, the next period tries again
                self._miss("Prometheus did not answer")
                continue
            broker = None if scraped_s is None else readings.at(scraped_s)
            if exported is None and not self.samples:
                continue  # the group has committed nothing yet: no lag to compare
            if exported is None or broker is None:
                self._miss("exported lag" if exported is None else "broker reading")
                continue
            batch = batch or 0.0  # no batch series with two points in the window: no batch read anything in it
            trigger = (produced or 0.0) * self.trigger_s
            self.samples.append(LagSample(time.monotonic() - self.started, exported, broker, batch, trigger))

    def _miss(self, what: str) -> None:
        self.missing[what] = self.missing.get(what, 0) + 1

    def _read_broker(self, readings: BrokerReadings) -> None:
        # a busy moment: the interpolation spans the readings either side
        with contextlib.suppress(Exception):
            readings.add(time.time(), float(sum(self.offsets.lag(self.topic, self.group).values())))

    def stop(self) -> None:
        self._stop.set()
        self.offsets.close()

    def summary(self) -> dict[str, Any]:
        """Counts, the worst sample's gap in records beside the records a batch read then (a gap during a stall is
        measured against no batch at all, so it is given in records, never divided by a batch), and every sample
        outside the bound."""
        worst = max(self.samples, key=lambda s: abs(s.exported - s.broker), default=None)
        return {
            "samples": len(self.samples),
            "within_one_batch": sum(s.within for s in self.samples),
            "missing": sum(self.missing.values()),
            "missing_because": dict(sorted(self.missing.items())),
            "worst_gap_records": None if worst is None else round(abs(worst.exported - worst.broker)),
            "worst_gap_batch_records": None if worst is None else round(worst.bound),
            # every sample outside the bound, for summary.json: when, and the three figures it compared
            "outside": [
                {
                    "t_s": round(s.t_s, 1),
                    "exported": s.exported,
                    "broker": round(s.broker),
                    "batch": round(s.batch_records),
                    "trigger": round(s.trigger_records),
                }
                for s in self.samples
                if not s.within
            ],
        }


@dataclass
class BrokerReadings:
    """The broker's lag, read about once a second, for the last `keep_s` seconds (wall-clock times, as
    Prometheus's timestamps are)."""

    keep_s: float = 120.0
    times_s: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)

    def add(self, t_s: float, lag: float) -> None:
        self.times_s.append(t_s)
        self.lags.append(lag)
        while self.times_s and self.times_s[0] < t_s - self.keep_s:
            del self.times_s[0], self.lags[0]

    def at(self, t_s: float) -> float | None:
        """The lag at `t_s`, interpolated between the readings either side of it; None outside them (a scrape older
        than the readings kept, or newer than the last one)."""
        i = bisect.bisect_left(self.times_s, t_s)
        if i < len(self.times_s) and self.times_s[i] == t_s:
            return self.lags[i]
        if i == 0 or i == len(self.times_s):
            return None
        t0, t1, a, b = self.times_s[i - 1], self.times_s[i], self.lags[i - 1], self.lags[i]
        return a + (b - a) * (t_s - t0) / (t1 - t0)
