"""Demo: sample the live job (workload, throughput, executors live and targeted, lag) and plot it over time."""

from __future__ import annotations

import csv
import io
import math
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark import metricnames as names
from daedalus_spark.domain import SPARK_DRIVER_ID
from daedalus_spark.report.outfile import replace_file

OFFSETS, RECORDS = names.total(names.SOURCE_LATEST_OFFSET), names.total(names.EXECUTOR_RECORDS)
QUERY_RECORDS = names.total(names.QUERY_INPUT_RECORDS)


@dataclass(frozen=True)
class Sample:
    t_s: float
    workload_per_s: float
    throughput_per_s: float
    executors: float
    target: float
    lag_records: float
    records_in: float = math.nan  # appended to the source so far (its end offsets, summed)
    records_out: float = math.nan  # read by the query's completed batches so far (numInputRows, summed)


def totals(text: str) -> dict[str, float]:
    """Sums over labels of the agent's metrics that the timeline shows."""
    wanted = {OFFSETS, RECORDS, QUERY_RECORDS, names.EXECUTORS, names.EXECUTORS_TARGET, names.LAG_RECORDS}
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in wanted and s.labels.get("executor_id") != SPARK_DRIVER_ID:
                out[s.name] = out.get(s.name, 0.0) + float(s.value)
    return out


@dataclass
class Sampler:
    """Every `period_s`, reads the agent's /metrics; rates are taken between consecutive samples."""

    agent_metrics_url: str
    period_s: float = 2.0
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _previous: tuple[float, dict[str, float]] | None = None
    started: float = field(default_factory=time.monotonic)

    def start(self) -> Sampler:
        threading.Thread(target=self._run, name="demo-sampler", daemon=True).start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                with urllib.request.urlopen(self.agent_metrics_url, timeout=2) as r:  # noqa: S310 - loopback
                    self.add(time.monotonic() - self.started, totals(r.read().decode()))
            except (OSError, ValueError):
                continue  # the driver is busy or restarting: a gap in the plot, not an error

    def add(self, t_s: float, now: dict[str, float]) -> None:
        if self._previous is not None:
            t0, before = self._previous
            dt = t_s - t0

            def rate(name: str) -> float:  # a metric that just appeared has no rate yet (not its total / dt)
                if name not in now or name not in before:
                    return math.nan
                return max(0.0, now[name] - before[name]) / dt

            self.samples.append(
                Sample(
                    t_s=round(t_s, 2),
                    workload_per_s=rate(OFFSETS),
                    throughput_per_s=rate(RECORDS),
                    executors=now.get(names.EXECUTORS, math.nan),
                    target=now.get(names.EXECUTORS_TARGET, math.nan),
                    lag_records=now.get(names.LAG_RECORDS, math.nan),
                    records_in=now.get(OFFSETS, math.nan),
                    records_out=now.get(QUERY_RECORDS, math.nan),
                )
            )
        self._previous = (t_s, now)

    def stop(self) -> None:
        self._stop.set()


def write_csv(samples: list[Sample], path: Path) -> None:
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(Sample.__dataclass_fields__))
    writer.writeheader()
    writer.writerows(asdict(s) for s in samples)
    replace_file(path, text.getvalue().encode())


def plot(samples: list[Sample], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    t = [s.t_s for s in samples]
    fig, (load, executors, lag) = plt.subplots(3, 1, figsize=(10, 8), sharex=True)

    # Records are counted when a micro-batch's stage completes: smooth over ~10 s so bursts do not hide the level.
    def smooth(values: list[float]) -> list[float]:
        return [float(v) for v in pd.Series(values).rolling(5, min_periods=1).mean()]

    load.plot(t, smooth([s.workload_per_s for s in samples]), label="workload (records/s arriving)")
    load.plot(t, smooth([s.throughput_per_s for s in samples]), label="throughput (records/s processed)", alpha=0.8)
    load.set_ylabel("records/s (10-s mean)")
    load.legend(loc="upper left")
    executors.step(t, [s.executors for s in samples], where="post", label="executors live")
    executors.step(t, [s.target for s in samples], where="post", linestyle="--", label="target")
    executors.set_ylabel("executors")
    executors.legend(loc="upper left")
    lag.plot(t, [s.lag_records for s in samples], color="tab:red")
    lag.set_ylabel("consumer lag (records)")
    lag.set_xlabel("seconds since start")
    fig.suptitle(title)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    replace_file(path, png.getvalue())
