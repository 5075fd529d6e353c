"""Monitor (pure): turn per-quantity time series into one validated Observation, or say what is missing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from daedalus_spark.domain import Observation, WorkerSeries
from daedalus_spark.monitor.port import MonitorError

Series = Mapping[float, float]  # timestamp (s) -> value
NOT_WORKERS = frozenset({"driver"})


@dataclass(frozen=True)
class RawWindow:
    """What a metrics source read for one window, before alignment and validation."""

    end_s: float
    step_s: float
    workload: Series
    throughput: Mapping[str, Series]  # executor id -> series
    utilization: Mapping[str, Series]
    lag_records: float | None
    executors: float | None
    uptime_s: float | None


def assemble(raw: RawWindow) -> Observation:
    """Align every series on the timestamps all of them share, then validate; throughput and utilization of a
    sample therefore always cover the same time."""
    if not raw.workload:
        raise MonitorError("empty", "no workload samples in the window (query_workload matched nothing)")
    executors = _scalar("executors", raw.executors)
    if executors != int(executors) or executors < 1:
        raise MonitorError("invalid", f"live executors {executors:g} is not a positive count")
    throughput = {e: s for e, s in raw.throughput.items() if e not in NOT_WORKERS and s}
    utilization = {e: s for e, s in raw.utilization.items() if e not in NOT_WORKERS and s}
    if not throughput or not utilization:
        which = "throughput" if not throughput else "utilization"
        raise MonitorError("empty", f"no per-executor {which} series in the window")
    # Live workers: both series reach the window's end. An executor that left keeps its records counter (a flat
    # throughput series) but loses its utilization, so it drops out here instead of cutting the window short.
    end = max(raw.workload)
    workers = sorted(e for e in set(throughput) & set(utilization)
                     if max(throughput[e]) >= end and max(utilization[e]) >= end)
    if len(workers) != int(executors):
        raise MonitorError("partial", f"series reaching the window's end for {len(workers)} executors "
                                      f"({', '.join(workers) or 'none'}) but {int(executors)} are live")
    times = set(raw.workload)
    for e in workers:
        times &= set(throughput[e]) & set(utilization[e])
    grid = sorted(times)
    if not grid:
        raise MonitorError("partial", "workload and executor series share no timestamp in the window")
    workload = _values("workload", raw.workload, grid)
    series = tuple(WorkerSeries(e, _values(f"throughput of executor {e}", throughput[e], grid),
                                _values(f"utilization of executor {e}", utilization[e], grid)) for e in workers)
    return Observation(
        time_s=grid[-1], step_s=raw.step_s, workload_per_s=workload, workers=series,
        consumer_lag_records=_scalar("consumer lag", raw.lag_records),
        scaleout=len(series), uptime_s=_scalar("uptime", raw.uptime_s),
    )


def _values(what: str, series: Series, grid: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(series[t]) for t in grid)
    bad = [v for v in values if not math.isfinite(v) or v < 0]
    if bad:
        raise MonitorError("invalid", f"{what} has {len(bad)} NaN, infinite or negative samples (e.g. {bad[0]})")
    return values


def _scalar(what: str, value: float | None) -> float:
    if value is None:
        raise MonitorError("empty", f"no {what} in the window")
    if not math.isfinite(value) or value < 0:
        raise MonitorError("invalid", f"{what} is {value}, not a non-negative number")
    return float(value)
