"""Monitor (start-up): the job's recent past read back with the live queries (`controller.backfill_s`), cut into
loop-interval windows, its gaps found and bad data named, and fed to the controller before its first tick."""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

from daedalus_spark.config import Config
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import Matrix, Window, build_observation
from daedalus_spark.monitor.files import MAX_METRIC_VALUE
from daedalus_spark.monitor.port import MonitorError

log = logging.getLogger(__name__)

MAX_POINTS_PER_QUERY = 10_000  # Prometheus refuses a range query of more than 11,000 points per series
# Samples one query of a chunk may answer (one series per executor): ~30 bytes each in JSON, far below the monitor's
# cap on an answer's size.
MAX_SAMPLES_PER_QUERY = 400_000
CHUNK_TIMEOUT_S = 30.0  # the budget of one chunk's queries (a live window's is monitor.timeout_s)
# The windows read for capacity hold at most this many samples (every series of every step), the newest kept: a day
# of 1-s steps at 8 executors took 27 s here; more executors read fewer hours.
MAX_WINDOW_SAMPLES = 4_000_000
# The ticks (and /healthz) start after the backfill: it stops reading windows this long after it began, well within
# the deployed liveness probe's patience (30 s + 6 x 20 s).
BUDGET_S = 90.0
# Beyond these no job goes: a value past them is a broken exporter or query, refused rather than learned from.
MAX_RATE_PER_S = MAX_METRIC_VALUE
MAX_UTILIZATION_RATIO = 2.0  # twice an executor's whole CPU quota or task slots
MAX_EXECUTORS = 10_000  # the config's own bound on controller.max_scaleout
MAX_LISTED = 10  # gaps and refusals listed one by one in the report; the rest counted

ForecastUse = Literal["skip", "continue", "afresh"]


@runtime_checkable
class PastSource(Protocol):
    """Where the past comes from: the PrometheusMonitor's range queries (or a replay of recorded windows)."""

    def answers(
        self, window: Window, *, names: Collection[str] | None = None, timeout_s: float | None = None
    ) -> Mapping[str, Matrix]:
        """The queries' answers (Prometheus's matrix shape) over the window's grid; raises MonitorError."""
        ...


class Learner(Protocol):
    """What the controller offers the backfill (controller.Controller)."""

    @property
    def known_until_s(self) -> float | None: ...

    def learn_past(self, obs: Observation) -> str: ...

    def learn_past_workload(
        self, workload_per_s: Sequence[float], *, step_s: float, end_s: float, forecast: ForecastUse
    ) -> None: ...


@dataclass(frozen=True)
class Gap:
    """Seconds (start_s, end_s] of the past without a usable workload sample."""

    start_s: float
    end_s: float
    why: str = "no samples"


@dataclass
class BackfillReport:
    """What the backfill read and learned; `lines()` is what the log and the knowledge report say."""

    start_s: float  # the first second asked for: now - backfill_s, or the end of what the knowledge held
    end_s: float  # the last: the next tick's window begins here
    step_s: float
    known_until_s: float | None = None
    first_sample_s: float | None = None  # the first workload sample's time; None: no sample at all
    workload_steps: int = 0  # steps with a usable workload sample
    gaps: list[Gap] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    forecast: str = "nothing"  # what the forecaster was given
    windows: int = 0
    windows_older: int = 0  # windows past MAX_WINDOW_SAMPLES, not read for capacity
    windows_learned: int = 0
    windows_missing: dict[str, int] = field(default_factory=dict)  # by MonitorError kind
    first_missing: str = ""
    stopped: str = ""  # why reading stopped before the end ('' = it did not)
    elapsed_s: float = 0.0

    def lines(self) -> list[str]:
        span = f"{_iso(self.start_s)} .. {_iso(self.end_s)}"
        if self.known_until_s is not None:
            span += f" (the stored knowledge holds the job until {_iso(self.known_until_s)}: only what came after)"
        lines = [f"backfill read {span} at {self.step_s:g}-s steps in {self.elapsed_s:.1f} s"]
        if self.first_sample_s is None:
            lines.append("backfill: no workload sample in it; the controller starts cold")
        elif self.first_sample_s > self.start_s + self.step_s:
            lines.append(f"backfill: nothing before {_iso(self.first_sample_s)} (Prometheus holds no older samples)")
        lines.append(
            f"backfill: {self.windows_learned} of {self.windows} loop windows learned from (capacity, batch line); "
            f"forecaster: {self.forecast}"
        )
        if self.windows_older:
            lines.append(
                f"backfill: capacity from the newest {self.windows} loop windows only ({self.windows_older} older ones "
                f"not read: at most {MAX_WINDOW_SAMPLES:,} samples at start)"
            )
        if self.windows_missing:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.windows_missing.items()))
            lines.append(f"backfill: windows not learned from: {kinds}; the first: {self.first_missing}")
        for gap in self.gaps[:MAX_LISTED]:
            lines.append(
                f"backfill gap: {_iso(gap.start_s)} .. {_iso(gap.end_s)} ({gap.end_s - gap.start_s:g} s, {gap.why}): "
                "not crossed"
            )
        if len(self.gaps) > MAX_LISTED:
            lines.append(f"backfill: {len(self.gaps) - MAX_LISTED} more gaps")
        lines += [f"backfill refused: {line}" for line in self.refused[:MAX_LISTED]]
        if len(self.refused) > MAX_LISTED:
            lines.append(f"backfill: {len(self.refused) - MAX_LISTED} more refusals")
        if self.stopped:
            lines.append(f"backfill stopped early: {self.stopped}")
        return lines


def warm_start(learner: Learner, monitor: object, config: Config, *, now_s: float) -> BackfillReport | None:
    """The sidecar's start: `backfill` from the monitor when it can read the past (a Prometheus), each line of its
    report logged (gaps, refusals and an early stop as warnings); None when off or the monitor keeps no past."""
    if config.controller.backfill_s <= 0:
        return None
    if not isinstance(monitor, PastSource):
        log.info("no backfill: the monitor (%s) keeps no past; the controller learns live", type(monitor).__name__)
        return None
    started = time.perf_counter()
    try:
        report = backfill(learner, monitor, config, now_s=now_s)
    except Exception:  # a bug reading the past must not keep the controller from running
        log.exception("backfill failed; the controller starts with what it learned before the failure")
        return None
    assert report is not None
    report.elapsed_s = time.perf_counter() - started
    for line in report.lines():
        warn = line.startswith(("backfill gap", "backfill refused", "backfill stopped", "backfill: windows not"))
        log.log(logging.WARNING if warn else logging.INFO, "%s", line)
    return report


def backfill(
    learner: Learner,
    source: PastSource,
    config: Config,
    *,
    now_s: float,
    monotonic: Callable[[], float] = time.monotonic,
) -> BackfillReport | None:
    """Read the last `controller.backfill_s` (after what the learner knows) and teach it to the learner; None when
    off. Never raises for the past's sake: what cannot be read is reported and the controller starts colder."""
    span_s, step_s = config.controller.backfill_s, config.monitor.step_s
    if span_s <= 0:
        return None
    end_s = math.floor(now_s / step_s + 1e-9) * step_s
    start_s = end_s - math.floor(span_s / step_s + 1e-9) * step_s
    known = learner.known_until_s
    if known is not None:
        start_s = max(start_s, min(math.ceil(known / step_s - 1e-9) * step_s, end_s))
    report = BackfillReport(start_s, end_s, step_s, known_until_s=known)
    if start_s >= end_s:
        return report
    try:
        workload = read_workload(source, start_s=start_s, end_s=end_s, step_s=step_s, refused=report.refused)
    except MonitorError as exc:
        report.stopped = f"the workload query: {exc.kind}: {exc}"
        return report
    runs = known_runs(workload)
    if not runs:
        return report
    report.first_sample_s = start_s + (runs[0][0] + 1) * step_s  # a sample is stamped with its step's end
    report.workload_steps = sum(b - a for a, b in runs)
    # Fewer missing steps than a forecast bucket at the end leave no bucket unseen when the live ticks go on: no gap.
    tolerance = max(0, _steps(config.forecast.resolution_s, step_s) - 1)
    report.gaps = gaps_between(runs, len(workload) - tolerance, start_s=start_s, step_s=step_s)
    _learn_workload(learner, workload, runs, report, tolerance_steps=tolerance)
    _learn_windows(learner, source, config, report, deadline=monotonic() + BUDGET_S, monotonic=monotonic)
    return report


def read_workload(
    source: PastSource, *, start_s: float, end_s: float, step_s: float, refused: list[str]
) -> list[float]:
    """The workload query's value at every step of (start_s, end_s], NaN where it has none or a value no job has
    (each such value one line in `refused`, naming the time)."""
    steps = _steps(end_s - start_s, step_s)
    values = [math.nan] * steps
    first = round(start_s / step_s)
    for chunk_start in range(0, steps, MAX_POINTS_PER_QUERY):
        chunk_end = min(chunk_start + MAX_POINTS_PER_QUERY, steps)
        window = Window((first + chunk_start) * step_s, (first + chunk_end) * step_s, step_s)
        matrix = source.answers(window, names=("workload",), timeout_s=CHUNK_TIMEOUT_S).get("workload", [])
        if len(matrix) > 1:
            raise MonitorError("invalid", f"query 'workload' returned {len(matrix)} series where one is expected")
        for pair in matrix[0].get("values", ()) if matrix else ():
            k, value, problem = _sample(pair, step_s)
            index = -1 if k is None else k - first - 1
            if problem and k is None:
                refused.append(f"query 'workload': {problem}")
            elif 0 <= index < steps and problem:
                refused.append(f"query 'workload' at {_iso((first + index + 1) * step_s)}: {problem}")
            elif 0 <= index < steps:
                values[index] = value
    return values


def known_runs(values: Sequence[float]) -> list[tuple[int, int]]:
    """[start, end) of every run of consecutive known (non-NaN) values."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, value in enumerate(values):
        if math.isnan(value):
            if start is not None:
                runs.append((start, i))
            start = None
        elif start is None:
            start = i
    if start is not None:
        runs.append((start, len(values)))
    return runs


def gaps_between(runs: Sequence[tuple[int, int]], steps: int, *, start_s: float, step_s: float) -> list[Gap]:
    """The missing steps after the first known one: between runs, and after the last until step `steps`."""
    gaps = [Gap(start_s + a * step_s, start_s + b * step_s) for (_, a), (b, _) in itertools.pairwise(runs)]
    if runs and runs[-1][1] < steps:
        gaps.append(Gap(start_s + runs[-1][1] * step_s, start_s + steps * step_s, "no samples until the start"))
    return gaps


def forecast_use(
    runs: Sequence[tuple[int, int]], steps: int, *, known: bool, tolerance_steps: int
) -> list[ForecastUse]:
    """What the forecaster does with each run: only the last one, if it reaches the end (or falls short of it by at
    most `tolerance_steps`, less than one of its buckets), and after a gap from what it knows, afresh; it never sees
    across a gap."""
    uses: list[ForecastUse] = ["skip"] * len(runs)
    if runs and steps - runs[-1][1] <= tolerance_steps:
        follows_the_known = len(runs) == 1 and runs[0][0] == 0
        uses[-1] = "afresh" if known and not follows_the_known else "continue"
    return uses


def _learn_workload(
    learner: Learner,
    workload: list[float],
    runs: list[tuple[int, int]],
    report: BackfillReport,
    *,
    tolerance_steps: int,
) -> None:
    uses = forecast_use(runs, len(workload), known=report.known_until_s is not None, tolerance_steps=tolerance_steps)
    for (a, b), use in zip(runs, uses, strict=True):
        end_s = report.start_s + b * report.step_s
        learner.learn_past_workload(workload[a:b], step_s=report.step_s, end_s=end_s, forecast=use)
        if use != "skip":
            how = "started afresh" if use == "afresh" else "fed"
            report.forecast = f"{how} with {_iso(end_s - (b - a) * report.step_s)} .. {_iso(end_s)} ({b - a} steps)"
    if runs and uses[-1] == "skip":
        report.forecast = "nothing (no workload at the end of the past read): it learns live"


def window_bounds(start_s: float, end_s: float, interval_s: float) -> list[tuple[float, float]]:
    """(start, end] of each loop window from `start_s` to `end_s`, the last ending at `end_s` (where the live loop
    continues), the first shorter where the span is not a whole number of intervals."""
    bounds: list[tuple[float, float]] = []
    t = end_s
    while t > start_s + 1e-9:
        bounds.append((max(start_s, t - interval_s), t))
        t -= interval_s
    return bounds[::-1]


def _learn_windows(
    learner: Learner,
    source: PastSource,
    config: Config,
    report: BackfillReport,
    *,
    deadline: float,
    monotonic: Callable[[], float],
) -> None:
    """Every loop window from the first workload sample on (the newest MAX_WINDOW_SAMPLES), assembled as the live
    monitor assembles one, read oldest first in chunks of whole windows until the deadline; a window that cannot be
    assembled or holds absurd data teaches nothing."""
    assert report.first_sample_s is not None
    interval_s, step_s = config.controller.loop_interval_s, report.step_s
    # The executors a window may hold, which sizes the reads: max_scaleout, or while it is the topic's partition count
    # (0, not known before the windows are read) the most the agent accepts.
    most = config.controller.max_scaleout or config.agent.max_executors
    bounds = window_bounds(report.first_sample_s - step_s, report.end_s, interval_s)
    steps_per_window = max(1, _steps(interval_s, step_s))
    kept = max(1, MAX_WINDOW_SAMPLES // ((2 * most + 8) * steps_per_window))  # 2 series an executor, 8 others
    report.windows_older, bounds = max(0, len(bounds) - kept), bounds[-kept:]
    report.windows = len(bounds)
    per_chunk = max(1, min(MAX_POINTS_PER_QUERY, MAX_SAMPLES_PER_QUERY // max(1, most)) // steps_per_window)
    for i in range(0, len(bounds), per_chunk):
        chunk = bounds[i : i + per_chunk]
        if monotonic() > deadline:
            report.stopped = f"at {_iso(chunk[0][0])}: the start-up's {BUDGET_S:g}-s budget ran out"
            return
        try:
            answers = source.answers(Window(chunk[0][0], chunk[-1][1], step_s), timeout_s=CHUNK_TIMEOUT_S)
        except MonitorError as exc:
            report.stopped = f"at {_iso(chunk[0][0])}: {exc.kind}: {exc}"
            log.warning("backfill stopped reading at %s: %s", _iso(chunk[0][0]), exc)
            return
        for window, sliced in split_answers(answers, [Window(a, b, step_s) for a, b in chunk]):
            _learn_window(learner, sliced, window, config, report)


def _learn_window(
    learner: Learner, answers: Mapping[str, Matrix], window: Window, config: Config, report: BackfillReport
) -> None:
    try:
        obs = build_observation(answers, window, executor_label=config.monitor.executor_label)
        problem = absurd(obs)
        if problem:
            raise MonitorError("absurd", problem)
        problem = learner.learn_past(obs)
        if problem:
            raise MonitorError("unusable", problem)
    except MonitorError as exc:
        report.windows_missing[exc.kind] = report.windows_missing.get(exc.kind, 0) + 1
        where = f"({_iso(window.start_s)}, {_iso(window.end_s)}]"
        report.first_missing = report.first_missing or f"{where}: {exc}"
        if exc.kind in ("invalid", "absurd"):
            report.refused.append(f"{where}: {exc}")
        return
    report.windows_learned += 1


def split_answers(
    answers: Mapping[str, Matrix], windows: Sequence[Window]
) -> list[tuple[Window, dict[str, list[Mapping[str, Any]]]]]:
    """Each window with the answers' samples inside it (a series keeps its labels in every window); a sample whose
    time is not a number goes to the first window, which the assembly then refuses naming it."""
    out: list[tuple[Window, dict[str, list[Mapping[str, Any]]]]] = [(w, {}) for w in windows]
    for name, matrix in answers.items():
        for _, sliced in out:
            sliced[name] = []
        for series in matrix:
            pairs = list(series.get("values", ()))
            timed = sorted((t, i) for i, pair in enumerate(pairs) if math.isfinite(t := _time(pair)))
            times = [t for t, _ in timed]
            untimed = [pair for pair in pairs if not math.isfinite(_time(pair))]
            for n, (window, sliced) in enumerate(out):
                eps = 1e-9 * window.step_s
                lo, hi = (
                    bisect.bisect_right(times, window.start_s + eps),
                    bisect.bisect_right(times, window.end_s + eps),
                )
                inside = [pairs[i] for _, i in timed[lo:hi]] + (untimed if n == 0 else [])
                if inside:
                    sliced[name].append({"metric": series.get("metric", {}), "values": inside})
    return out


def absurd(obs: Observation) -> str:
    """What in an assembled window no job produces ('' if nothing): rates or lag beyond MAX_RATE_PER_S,
    utilization beyond MAX_UTILIZATION_RATIO, more than MAX_EXECUTORS executors; named by query and time."""
    n = len(obs.workload_per_s)

    def at(i: int) -> str:
        return _iso(obs.time_s - (n - 1 - i) * obs.step_s)

    for i, value in enumerate(obs.workload_per_s):
        if value > MAX_RATE_PER_S:
            return f"query 'workload' at {at(i)}: {value:g} records/s is beyond any job"
    for e in obs.executors:
        for i, (records, busy) in enumerate(zip(e.throughput_per_s, e.utilization_ratio, strict=False)):
            if records > MAX_RATE_PER_S:
                return (
                    f"query 'throughput' executor {e.executor_id} at {at(i)}: {records:g} records/s is beyond any job"
                )
            if busy > MAX_UTILIZATION_RATIO:
                return (
                    f"query 'utilization' executor {e.executor_id} at {at(i)}: {busy:g} is beyond "
                    f"{MAX_UTILIZATION_RATIO:g} (a quota's share, not cores or seconds?)"
                )
    if obs.consumer_lag_records > MAX_RATE_PER_S:
        return f"query 'lag' at {at(n - 1)}: {obs.consumer_lag_records:g} records is beyond any job"
    if obs.scaleout > MAX_EXECUTORS:
        return f"query 'executors' at {at(n - 1)}: {obs.scaleout} executors is beyond any job"
    return ""


def _sample(pair: Any, step_s: float) -> tuple[int | None, float, str]:
    """(grid index, value, problem) of one [time, value] pair: the problem names what no job produces."""
    try:
        t_s, value = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, IndexError):
        return None, math.nan, f"sample {pair!r:.60} is not a number"
    if not math.isfinite(t_s):
        return None, math.nan, f"sample {pair!r:.60} has no time"
    k = round(t_s / step_s)
    if not (math.isfinite(value) and value >= 0):
        return k, math.nan, f"{value} records/s (NaN, infinite or negative)"
    if value > MAX_RATE_PER_S:
        return k, math.nan, f"{value:g} records/s is beyond any job"
    return k, value, ""


def _time(pair: Any) -> float:
    try:
        return float(pair[0])
    except (TypeError, ValueError, IndexError):
        return math.nan


def _steps(seconds: float, step_s: float) -> int:
    return max(0, round(seconds / step_s))


def _iso(time_s: float) -> str:
    return datetime.fromtimestamp(time_s, UTC).isoformat(timespec="seconds")
