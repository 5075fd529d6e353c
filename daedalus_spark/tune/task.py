"""Tuning (pure core, run in Spark tasks): one candidate config simulated over one window of the history."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from daedalus_spark.analyze.forecast import FitCache, ModelMemo, fitcache, modelmemo
from daedalus_spark.config import parse_config
from daedalus_spark.sim.daedalus import DaedalusPolicy
from daedalus_spark.sim.evaluate import controller_config
from daedalus_spark.sim.jobmodel import parse_job_model
from daedalus_spark.sim.metrics import behind_mask, latency_violation_mask, scored_part, summarize
from daedalus_spark.sim.runner import RunResult, make_setup, run_policy
from daedalus_spark.tune.history import runs
from daedalus_spark.tune.split import Window


@dataclass(frozen=True)
class WindowRow:
    """One candidate on one window, by the acceptance rule: a row of rows.csv and of the Spark job's DataFrame."""

    candidate: int
    window: int
    part: str  # select or holdout
    start_s: int
    end_s: int
    hours: float  # scored (the lead-in aside)
    executor_hours: float
    avg_executors: float
    rescales: int
    recovery_violations: int
    behind_s: int
    behind_episodes: int
    violations: int  # recoveries over the target and stretches late outside recoveries
    latency_p95_s: float


ROW_FIELDS = tuple(f.name for f in dataclasses.fields(WindowRow))


@dataclass(frozen=True)
class WindowTask:
    """What a Spark task needs, as plain data: the candidate's whole config, the window, its seed."""

    candidate: int
    config: dict[str, Any]
    window: Window
    seed: int


@dataclass(frozen=True)
class Setting:
    """Shared by every task: the simulated job (plain data), the load it is sized for, the user's recovery and latency
    targets (every candidate is judged against them, whatever targets it plans with), how many fitted models the
    process keeps for the next candidates (0: every candidate fits its own), and how many ARIMA updates and
    forecasts (0: every candidate's models compute their own)."""

    job_model: dict[str, Any]
    sized_for_per_s: float
    target_recovery_s: float
    target_latency_s: float
    fit_cache_entries: int = fitcache.DEFAULT_MAX_ENTRIES
    model_memo_entries: int = modelmemo.DEFAULT_MAX_ENTRIES


# One each per process: a Spark Python worker runs task after task (spark.python.worker.reuse), so the later
# candidates of a window find the fits, updates and forecasts its earlier ones made. Keyed by everything they read,
# so they never change a row.
_fit_cache: FitCache | None = None
_model_memo: ModelMemo | None = None


def process_fit_cache(max_entries: int) -> FitCache | None:
    """This process's fit cache with room for `max_entries` (a new, empty one when the size changes); None for 0."""
    global _fit_cache
    if max_entries <= 0:
        return None
    if _fit_cache is None or _fit_cache.max_entries != max_entries:
        _fit_cache = FitCache(max_entries)
    return _fit_cache


def process_model_memo(max_entries: int) -> ModelMemo | None:
    """This process's model memo with room for `max_entries` (a new, empty one when the size changes); None for 0."""
    global _model_memo
    if max_entries <= 0:
        return None
    if _model_memo is None or _model_memo.max_entries != max_entries:
        _model_memo = ModelMemo(max_entries)
    return _model_memo


def fit_cache_counts() -> tuple[int, int]:
    """Hits and misses of this process's fit cache so far."""
    return (0, 0) if _fit_cache is None else (_fit_cache.hits, _fit_cache.misses)


def model_memo_counts() -> tuple[int, int, int]:
    """Hits, misses and replayed updates of this process's model memo so far."""
    return (0, 0, 0) if _model_memo is None else (_model_memo.hits, _model_memo.misses, _model_memo.replayed)


def process_counts() -> tuple[int, ...]:
    """This process's fit cache hits and misses, then its model memo's hits, misses and replayed updates."""
    return fit_cache_counts() + model_memo_counts()


def window_seed(seed: int, window: int) -> int:
    """The same draws for every candidate on a window (common random numbers: differences are the configs')."""
    return (seed + 7919 * window) % 2**32


def episodes(mask: np.ndarray, *, longer_than_s: float = 0) -> int:
    """Runs of True longer than `longer_than_s` seconds."""
    return sum(1 for a, b in runs(mask) if b - a > longer_than_s)


def judge(
    run: RunResult, *, start: int, candidate: int, window: Window, target_recovery_s: float, target_latency_s: float
) -> WindowRow:
    """One row: the figures of the run from second `start` on, by the acceptance rule. A violation is a recovery
    longer than the target, or a stretch of latency above the objective outside recoveries; a recovery from a
    rescale in the lead-in excuses its seconds as it would have. Seconds behind the trigger are a diagnostic."""
    scored = scored_part(run, start)
    m = summarize(
        scored,
        static_executors=1,
        oracle_executor_hours=0.0,
        target_recovery_s=target_recovery_s,
        target_latency_s=target_latency_s,
    )
    behind_at = behind_mask(run, target_recovery_s)[start:]
    late_at = latency_violation_mask(run, target_latency_s=target_latency_s, target_recovery_s=target_recovery_s)
    return WindowRow(
        candidate=candidate,
        window=window.index,
        part=window.part,
        start_s=window.start_s,
        end_s=window.end_s,
        hours=len(scored.scaleout) / 3600.0,
        executor_hours=m.executor_hours,
        avg_executors=m.avg_executors,
        rescales=m.rescales,
        recovery_violations=m.recovery_violations,
        behind_s=int(behind_at.sum()),
        behind_episodes=episodes(behind_at),
        violations=m.recovery_violations + episodes(late_at[start:]),
        latency_p95_s=m.latency_p95_s,
    )


def simulate_window(task: WindowTask, workload_per_s: np.ndarray, setting: Setting) -> WindowRow:
    """The daedalus controller (the real loop step) with the candidate's config over the window and its lead-in."""
    job_model = parse_job_model(setting.job_model)
    config = controller_config(parse_config(task.config), job_model)
    w = task.window
    series = np.asarray(workload_per_s[w.lead_start_s : w.end_s], dtype=float)
    setup = make_setup(series, job_model, config, task.seed, sized_for_per_s=setting.sized_for_per_s)
    fits, models = process_fit_cache(setting.fit_cache_entries), process_model_memo(setting.model_memo_entries)
    run = run_policy(setup, DaedalusPolicy(config, fits=fits, models=models))
    start = w.start_s - w.lead_start_s
    return judge(
        run,
        start=start,
        candidate=task.candidate,
        window=w,
        target_recovery_s=setting.target_recovery_s,
        target_latency_s=setting.target_latency_s,
    )
