"""Monitor (test double of a job's past): the agent's metrics over hours as timestamped OpenMetrics text, which
`promtool tsdb create-blocks-from openmetrics` turns into a Prometheus's history (backfill tests and benchmark)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from daedalus_spark import metricnames as names


def cyclic_load(t_s: float) -> float:
    """1,000 records/s ± 500 on a 30-min cycle."""
    return 1000.0 + 500.0 * math.sin(2 * math.pi * t_s / 1800.0)


@dataclass(frozen=True)
class SyntheticHistory:
    """A job keeping up with `load` on `executors` executors (ids 1..n, an equal share each) at CPU
    0.05 + records/s ÷ 1,000 of a 1-core quota; a batch every 1 / `batches_per_s` s taking `fixed_s` plus
    `per_record_s` a record. `gaps` are (start, end) seconds without any sample; `quota_cores(executor, t)` the
    exported CPU quota (1: the quota the CPU is a share of)."""

    duration_s: int
    step_s: int = 10
    executors: int = 3
    load: Callable[[float], float] = cyclic_load
    gaps: Sequence[tuple[int, int]] = ()
    quota_cores: Callable[[str, int], float] = lambda executor, t: 1.0
    batches_per_s: float = 0.5
    fixed_s: float = 0.2
    per_record_s: float = 1e-6
    uptime_at_start_s: float = 3600.0

    def openmetrics(self, start_s: int) -> Iterator[str]:
        """The lines of the exposition, family by family, the samples stamped from `start_s` on."""
        families = (
            (names.SOURCE_LATEST_OFFSET, "counter"),
            (names.EXECUTOR_RECORDS, "counter"),
            (names.EXECUTOR_CPU_SECONDS, "counter"),
            (names.EXECUTOR_CPU_LIMIT_CORES, "gauge"),
            (names.LAG_RECORDS, "gauge"),
            (names.EXECUTORS, "gauge"),
            (names.UPTIME_SECONDS, "gauge"),
            (names.QUERY_BATCHES, "counter"),
            (names.QUERY_INPUT_RECORDS, "counter"),
            (names.QUERY_BATCH_SECONDS, "counter"),
        )
        for name, kind in families:
            yield f"# TYPE {name} {kind}"
            for t, offset in self._offsets():
                yield from (name + sample for sample in self._samples(name, t, offset, start_s + t))
        yield "# EOF"

    def _offsets(self) -> Iterator[tuple[int, float]]:
        """(second, the topic's end offset) at every sampled step: the load integrated by trapezoids."""
        offset = 0.0
        for t in range(0, self.duration_s + 1, self.step_s):
            if t:
                offset += self.step_s * (self.load(t - self.step_s) + self.load(t)) / 2
            if not any(a <= t < b for a, b in self.gaps):
                yield t, offset

    def _samples(self, name: str, t: int, offset: float, ts: int) -> list[str]:
        app, ids = 'application_id="app-1"', [str(i) for i in range(1, self.executors + 1)]
        share = offset / self.executors
        batches = self.batches_per_s * t
        if name == names.SOURCE_LATEST_OFFSET:
            return [f'_total{{topic="events",partition="0"}} {offset:.3f} {ts}']
        if name == names.EXECUTOR_RECORDS:
            return [f'_total{{executor_id="{e}"}} {share:.3f} {ts}' for e in ids]
        if name == names.EXECUTOR_CPU_SECONDS:
            return [f'_total{{executor_id="{e}"}} {0.05 * t + share / 1000.0:.6f} {ts}' for e in ids]
        if name == names.EXECUTOR_CPU_LIMIT_CORES:
            return [f'{{executor_id="{e}"}} {self.quota_cores(e, t)} {ts}' for e in ids]
        if name == names.LAG_RECORDS:
            return [f" 0 {ts}"]
        if name == names.EXECUTORS:
            return [f"{{{app}}} {self.executors} {ts}"]
        if name == names.UPTIME_SECONDS:
            return [f"{{{app}}} {self.uptime_at_start_s + t} {ts}"]
        if name == names.QUERY_BATCHES:
            return [f'_total{{query="q"}} {batches} {ts}']
        if name == names.QUERY_INPUT_RECORDS:
            return [f'_total{{query="q"}} {offset:.3f} {ts}']
        seconds = self.fixed_s * batches + self.per_record_s * offset
        return [f'_total{{query="q"}} {seconds:.6f} {ts}']
