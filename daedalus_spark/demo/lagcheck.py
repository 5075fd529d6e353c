"""Demo (Kafka): checks the monitor's lag source while the demo runs — kafka-exporter's lag as Prometheus holds it
against the lag computed from the broker's own offsets at the same moment, within one batch's records."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark import metricnames as names
from daedalus_spark.kafkacluster.offsets import BrokerOffsets

_BATCH = (
    f"sum(increase({names.total(names.QUERY_INPUT_RECORDS)}[30s])) / "
    f"clamp_min(sum(increase({names.total(names.QUERY_BATCHES)}[30s])), 1)"
)


@dataclass(frozen=True)
class LagSample:
    t_s: float
    exported: float  # sum of kafka_consumergroup_lag in Prometheus (its last scrape)
    broker: float  # sum over partitions of log-end minus committed, asked of the broker now
    batch_records: float  # records a batch read, on average over the last 30 s

    @property
    def within(self) -> bool:
        return abs(self.exported - self.broker) <= max(self.batch_records, 1.0)


@dataclass
class LagCheck:
    """Every `period_s`, one LagSample; a sample Prometheus or the broker could not give is counted as missing."""

    prometheus_url: str
    offsets: BrokerOffsets
    topic: str
    group: str
    period_s: float = 5.0
    samples: list[LagSample] = field(default_factory=list)
    missing: int = 0
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
        while not self._stop.wait(self.period_s):
            try:
                exported = self._query(f"sum(kafka_consumergroup_lag{{{selector}}})")
                broker = float(sum(self.offsets.lag(self.topic, self.group).values()))
                batch = self._query(_BATCH)
            except Exception:  # noqa: BLE001 - a busy moment: counted as missing, the next period tries again
                self.missing += 1
                continue
            if exported is None or batch is None:
                self.missing += 1
                continue
            self.samples.append(LagSample(time.monotonic() - self.started, exported, broker, batch))

    def stop(self) -> None:
        self._stop.set()
        self.offsets.close()

    def summary(self) -> dict[str, Any]:
        """Counts, and the worst sample's gap in records beside the records a batch read then (a gap during a stall
        is measured against no batch at all, so it is given in records, never divided by a batch)."""
        worst = max(self.samples, key=lambda s: abs(s.exported - s.broker), default=None)
        return {
            "samples": len(self.samples),
            "within_one_batch": sum(s.within for s in self.samples),
            "missing": self.missing,
            "worst_gap_records": None if worst is None else round(abs(worst.exported - worst.broker)),
            "worst_gap_batch_records": None if worst is None else round(worst.batch_records),
        }
