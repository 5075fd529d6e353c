"""Monitor (pure): turn range-query results into one Observation on a common step grid, or say why it cannot."""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from daedalus_spark.domain import (
    SPARK_DRIVER_ID,
    BatchWindow,
    ExecutorSeries,
    Observation,
    PartitionLoad,
    is_application_id,
)
from daedalus_spark.monitor.port import MonitorError

log = logging.getLogger(__name__)

# The queries every monitor answers, in Prometheus's matrix shape: [{"metric": {labels}, "values": [[t, v], ...]}].
QUERIES = ("workload", "throughput", "utilization", "lag", "executors", "uptime")
SCALAR_QUERIES = ("workload", "lag", "executors", "uptime")
# Rates of the query's progress counters (batches, their input rows, their seconds): used together or not at all.
BATCH_QUERIES = ("batches", "batch_records", "batch_seconds")
# Who runs the job: the application observed (its series' `application_id` label) and the agent's executor target.
IDENTITY_QUERIES = ("application", "agent_target")
APPLICATION_LABEL = "application_id"
_MOST_EXECUTORS = 100_000  # the largest agent target believed
# Answered when the monitor can; without them the Observation says less, but it is still whole.
OPTIONAL_QUERIES = ("partitions", *BATCH_QUERIES, *IDENTITY_QUERIES)

Matrix = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Window:
    """The step grid of (start_s, end_s]: timestamps k * step_s, so consecutive windows never share a sample."""

    start_s: float
    end_s: float
    step_s: float

    @property
    def first_index(self) -> int:
        return math.floor(self.start_s / self.step_s + 1e-9) + 1

    @property
    def last_index(self) -> int:
        return math.floor(self.end_s / self.step_s + 1e-9)

    def times_s(self) -> list[float]:
        return [k * self.step_s for k in range(self.first_index, self.last_index + 1)]

    def index(self, t_s: float) -> int:
        return round(t_s / self.step_s)


def render_duration(seconds: float) -> str:
    """A PromQL duration for `seconds` (whole milliseconds: PromQL has no fractional units)."""
    ms = max(1, round(seconds * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def substitute(template: str, rate_window_s: float, job_labels: Mapping[str, str] | None = None) -> str:
    """The PromQL of a query template: `$rate_window` a duration, `$selector` the job's label matchers."""
    return template.replace("$rate_window", render_duration(rate_window_s)).replace(
        "$selector", selector(job_labels or {})
    )


def selector(job_labels: Mapping[str, str]) -> str:
    """Exact-match PromQL label matchers, values quoted as PromQL strings (JSON's escapes are PromQL's)."""
    return ",".join(f"{label}={json.dumps(value)}" for label, value in sorted(job_labels.items()))


def build_observation(results: Mapping[str, Matrix], window: Window, *, executor_label: str) -> Observation:
    """The Observation of `window` from the six query results (see QUERIES) and those of OPTIONAL_QUERIES the
    monitor has (partition rates, batch progress: never a reason to refuse the window).

    Throughput and utilization of an executor are aligned by timestamp (a timestamp missing in either is dropped);
    the workload and every executor then share the timestamps all of them have. Leading timestamps may be missing
    (rate() needs two samples; an executor that started inside the window), holes inside the grid may not.
    Raises MonitorError: `empty` (a query returned no series), `invalid` (non-numeric, NaN, infinite or negative
    values; several series where one is expected), `partial` (fewer executors with series than the scale-out,
    holes, no common sample).
    """
    for name in QUERIES:
        if not results.get(name):
            raise MonitorError(
                "empty", f"query {name!r} returned no series for ({window.start_s:.0f}, {window.end_s:.0f}]"
            )
    scalars = {name: _single(name, results[name], window) for name in SCALAR_QUERIES}
    throughput = _per_executor("throughput", results["throughput"], window, executor_label)
    utilization = _per_executor("utilization", results["utilization"], window, executor_label)
    scaleout = _whole(scalars["executors"])
    executors = _aligned_executors(throughput, utilization)
    executors = _live(executors, scaleout)
    grid = _common_grid(scalars["workload"], executors, window)
    if max(scalars["lag"]) < grid[-1]:  # the lag series ended: the lag now is unknown, its last value no stand-in
        raise MonitorError(
            "empty",
            f"consumer lag has no sample at {grid[-1] * window.step_s:.0f} (its last at "
            f"{max(scalars['lag']) * window.step_s:.0f}): the source's offsets are unreadable (broker down, topic "
            "gone, offsets not committed)",
        )
    return Observation(
        time_s=grid[-1] * window.step_s,
        step_s=window.step_s,
        workload_per_s=tuple(scalars["workload"][k] for k in grid),
        executors=tuple(
            ExecutorSeries(e, tuple(executors[e][k][0] for k in grid), tuple(executors[e][k][1] for k in grid))
            for e in sorted(executors, key=_executor_order)
        ),
        consumer_lag_records=_latest(scalars["lag"]),
        scaleout=scaleout,
        uptime_s=_latest(scalars["uptime"]),
        partitions=_partition_loads(results.get("partitions", ()), window),
        batches=_batch_window(results, grid, window),
        application_id=_application_id(results.get("application", ()), grid[-1], window),
        agent_target=_agent_target(results.get("agent_target", ()), grid[-1], window),
    )


def _application_id(matrix: Matrix, last: int, window: Window) -> str:
    """The application whose series has a sample at the observation's time (the one before a restart has ended):
    '' (unknown, logged) when none does, several do (a selector matching two applications), or its label is no id."""
    ids = {
        str(series.get("metric", {}).get(APPLICATION_LABEL, ""))
        for series in matrix
        if _at(series, last, window) is not None
    }
    if len(ids) != 1:
        if ids:
            log.warning("application id unknown this window: %d applications at its end (%s)", len(ids), sorted(ids))
        return ""
    (found,) = ids
    if not is_application_id(found):
        log.warning("application id unknown this window: %r is not an application id", found[:60])
        return ""
    return found


def _agent_target(matrix: Matrix, last: int, window: Window) -> int | None:
    """The agent's executor target at the observation's time; None (unknown) when it has none there (no sample before
    the agent's first target), several series answer, or the value is not a whole number of executors."""
    values = [value for series in matrix if (value := _at(series, last, window)) is not None]
    if not values:
        return None
    try:
        target = float(values[0])
    except (TypeError, ValueError):
        target = float("nan")
    if len(values) != 1 or not (0 <= target <= _MOST_EXECUTORS and target == round(target)):
        log.warning("agent target unknown this window: %s", values[:3])
        return None
    return round(target)


def _at(series: Mapping[str, Any], last: int, window: Window) -> Any:
    """The raw value of a series at grid index `last`, None when it has none there."""
    for pair in series.get("values", ()):
        try:
            if window.index(float(pair[0])) == last:
                return pair[1]
        except (TypeError, ValueError, IndexError):
            continue
    return None


def _partition_loads(matrix: Matrix, window: Window) -> tuple[PartitionLoad, ...]:
    """Mean records/s of each source partition over the window; all or none: one bad series (no integer
    partition label, a bad value, a partition twice) drops them all, logged, and the window is still observed."""
    loads: dict[tuple[str, int], float] = {}
    try:
        for series in matrix:
            labels = series.get("metric", {})
            topic, partition = labels.get("topic"), str(labels.get("partition", ""))
            if topic is None or not partition.isdigit():
                raise MonitorError("invalid", f"query 'partitions': series without topic and partition: {labels}")
            if (topic, int(partition)) in loads:
                raise MonitorError("invalid", f"query 'partitions': two series for {topic}/{partition}")
            points = _points("partitions", series, window)
            if points:
                loads[(topic, int(partition))] = sum(points.values()) / len(points)
    except MonitorError as exc:
        log.warning("partition rates ignored this window: %s", exc)
        return ()
    return tuple(PartitionLoad(t, p, rate) for (t, p), rate in sorted(loads.items()))


def _batch_window(results: Mapping[str, Matrix], grid: Sequence[int], window: Window) -> BatchWindow | None:
    """The batches, records and batch seconds of the window's kept samples: each rate x step, summed. All or none:
    a batch query missing, failed or unusable at any kept timestamp leaves None (logged), and the window stands."""
    if not any(results.get(name) for name in BATCH_QUERIES):
        log.debug("no batch progress this window")  # a source without the agent's progress counters: routine
        return None
    try:
        batches, records, seconds = (_increase(name, results.get(name, ()), grid, window) for name in BATCH_QUERIES)
    except MonitorError as exc:
        log.info("batch progress ignored this window: %s", exc)
        return None
    return BatchWindow(batches=batches, input_records=records, duration_s=seconds)


def _increase(name: str, matrix: Matrix, grid: Sequence[int], window: Window) -> float:
    """What the counter behind rate query `name` grew by over the grid's steps; it must cover every one of them,
    or the sums of the three batch queries would describe different seconds."""
    if not matrix:
        raise MonitorError("empty", f"query {name!r} returned no series")
    if len(matrix) != 1:
        raise MonitorError("invalid", f"query {name!r} returned {len(matrix)} series where one is expected")
    points = _points(name, matrix[0], window)
    missing = [k for k in grid if k not in points]
    if missing:
        raise MonitorError("partial", f"query {name!r} has no sample at {missing[0] * window.step_s:.0f} s")
    return sum(points[k] for k in grid) * window.step_s


def _points(name: str, series: Mapping[str, Any], window: Window) -> dict[int, float]:
    """Grid index -> value of one series inside the window; bad values raise `invalid`."""
    labels = series.get("metric", {})
    points: dict[int, float] = {}
    for pair in series.get("values", ()):
        try:
            t_s, value = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            raise MonitorError("invalid", f"query {name!r} {labels}: sample {pair!r} is not a number") from None
        if not (math.isfinite(value) and value >= 0):
            raise MonitorError(
                "invalid", f"query {name!r} {labels}: value {value} at {t_s:.0f} s (NaN, infinite or negative)"
            )
        k = window.index(t_s)
        if window.first_index <= k <= window.last_index:
            points[k] = value
    return points


def _single(name: str, matrix: Matrix, window: Window) -> dict[int, float]:
    if len(matrix) != 1:
        raise MonitorError(
            "invalid",
            f"query {name!r} returned {len(matrix)} series where one is expected (aggregate it, e.g. with sum())",
        )
    points = _points(name, matrix[0], window)
    if not points:
        raise MonitorError("empty", f"query {name!r} has no sample in ({window.start_s:.0f}, {window.end_s:.0f}]")
    return points


def _per_executor(name: str, matrix: Matrix, window: Window, label: str) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for series in matrix:
        executor = series.get("metric", {}).get(label)
        if executor is None:
            raise MonitorError(
                "invalid", f"query {name!r}: a series without the executor label {label!r}: {series.get('metric')}"
            )
        if executor == SPARK_DRIVER_ID:  # the driver runs no source tasks: not an executor
            continue
        if executor in out:
            raise MonitorError(
                "invalid", f"query {name!r}: two series for executor {executor!r} (aggregate by {label})"
            )
        points = _points(name, series, window)
        if points:
            out[executor] = points
    return out


def _aligned_executors(
    throughput: Mapping[str, dict[int, float]], utilization: Mapping[str, dict[int, float]]
) -> dict[str, dict[int, tuple[float, float]]]:
    executors = {}
    for executor in throughput.keys() & utilization.keys():
        both = throughput[executor].keys() & utilization[executor].keys()
        if both:
            executors[executor] = {k: (throughput[executor][k], utilization[executor][k]) for k in both}
    return executors


def _live(
    executors: dict[str, dict[int, tuple[float, float]]], scaleout: int
) -> dict[str, dict[int, tuple[float, float]]]:
    """The executors that report until the end; those that left inside the window are dropped."""
    if scaleout < 1:
        raise MonitorError("partial", f"the scale-out is {scaleout}: no live executor to observe")
    if len(executors) > scaleout:
        last = max(max(points) for points in executors.values())
        executors = {e: points for e, points in executors.items() if max(points) == last}
    if len(executors) != scaleout:
        ids = ", ".join(sorted(executors, key=_executor_order)) or "none"
        raise MonitorError(
            "partial",
            f"{len(executors)} executors with throughput and utilization series ({ids}) "
            f"but the scale-out is {scaleout}",
        )
    return executors


def _common_grid(
    workload: Mapping[int, float], executors: Mapping[str, Mapping[int, Any]], window: Window
) -> list[int]:
    common = set(workload)
    for points in executors.values():
        common &= points.keys()
    if not common:
        raise MonitorError(
            "partial", f"workload and executor series share no timestamp in ({window.start_s:.0f}, {window.end_s:.0f}]"
        )
    grid = sorted(common)
    holes = (grid[-1] - grid[0] + 1) - len(grid)
    if holes:
        first_hole = next(k for k, nxt in itertools.pairwise(grid) if nxt != k + 1) + 1
        raise MonitorError(
            "partial", f"{holes} samples missing inside the window (first at {first_hole * window.step_s:.0f} s)"
        )
    return grid


def _latest(points: Mapping[int, float]) -> float:
    return points[max(points)]


def _whole(points: Mapping[int, float]) -> int:
    value = _latest(points)
    if abs(value - round(value)) > 1e-6:
        raise MonitorError("invalid", f"executor count {value} is not a whole number")
    return round(value)


def _executor_order(executor: str) -> tuple[int, str]:
    return (int(executor), "") if executor.isdigit() else (1 << 62, executor)
