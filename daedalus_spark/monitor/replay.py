"""Monitor (replay): recorded Observations served as range-query answers — a past the start-up's backfill reads
where no Prometheus keeps one (the simulator, tests)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import Matrix, Window

# The label the answers carry per executor (monitor.executor_label's default).
EXECUTOR_LABEL = "executor_id"


@dataclass
class RecordedPast:
    """Per-step samples of recorded windows, answered like Prometheus: a series has a sample at a step only where a
    recorded window had one. Lag, scale-out and uptime, which an Observation holds once, hold over its window."""

    executor_label: str = EXECUTOR_LABEL
    _series: dict[str, dict[tuple[tuple[str, str], ...], dict[int, float]]] = field(default_factory=dict, repr=False)
    step_s: float = 0.0

    @classmethod
    def of(cls, windows: Iterable[Observation], executor_label: str = EXECUTOR_LABEL) -> RecordedPast:
        past = cls(executor_label)
        for obs in windows:
            past.record(obs)
        return past

    def record(self, obs: Observation) -> None:
        """Keep the window's samples (one step for all windows recorded)."""
        if self.step_s and obs.step_s != self.step_s:
            raise ValueError(f"a window at {obs.step_s}-s steps among {self.step_s}-s ones")
        self.step_s = obs.step_s
        n = len(obs.workload_per_s)
        ks = [round(obs.time_s / obs.step_s) - (n - 1 - i) for i in range(n)]
        self._put("workload", (), ks, obs.workload_per_s)
        for e in obs.executors:
            label = ((self.executor_label, e.executor_id),)
            self._put("throughput", label, ks, e.throughput_per_s)
            self._put("utilization", label, ks, e.utilization_ratio)
        self._put("lag", (), ks, [obs.consumer_lag_records] * n)
        self._put("executors", (), ks, [float(obs.scaleout)] * n)
        self._put("uptime", (), ks, [obs.uptime_s - (n - 1 - i) * obs.step_s for i in range(n)])
        for p in obs.partitions:
            self._put("partitions", (("partition", str(p.partition)), ("topic", p.topic)), ks, [p.records_per_s] * n)
        if obs.batches is not None and n:
            seconds = n * obs.step_s  # the window's totals as a steady rate over its samples
            for name, total in (
                ("batches", obs.batches.batches),
                ("batch_records", obs.batches.input_records),
                ("batch_seconds", obs.batches.duration_s),
            ):
                self._put(name, (), ks, [total / seconds] * n)

    def _put(self, name: str, labels: tuple[tuple[str, str], ...], ks: list[int], values: Iterable[float]) -> None:
        points = self._series.setdefault(name, {}).setdefault(labels, {})
        points.update(zip(ks, values, strict=False))

    def answers(
        self, window: Window, *, names: Collection[str] | None = None, timeout_s: float | None = None
    ) -> dict[str, Matrix]:
        out: dict[str, Matrix] = {}
        for name, series in self._series.items():
            if names is not None and name not in names:
                continue
            matrix: list[Mapping[str, Any]] = []
            for labels, points in series.items():
                values = [
                    [k * window.step_s, repr(points[k])]
                    for k in range(window.first_index, window.last_index + 1)
                    if k in points
                ]
                if values:
                    matrix.append({"metric": dict(labels), "values": values})
            out[name] = matrix
        return out

    def close(self) -> None:
        return None
