"""Analyze: the refit port — the forecaster requests a fit and collects a validated model — and its inline form."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from daedalus_spark.analyze.forecast.fitting import FitJob
from daedalus_spark.analyze.forecast.models import ArimaModel
from daedalus_spark.analyze.forecast.scoring import NUMERIC_FAILURES


@dataclass(frozen=True)
class FitFailed:
    """A requested fit that raised or came back damaged: the forecaster keeps what it has and asks again later."""

    reason: str


class RefitScheduler(Protocol):
    """Runs the fits the forecaster requests, one at a time; where (inline, a thread, another process) is the
    runtime's choice (runtime/refits.py)."""

    def request(self, job: FitJob) -> None:
        """Start `job`; an earlier one not yet collected is dropped."""
        ...

    def collect(self) -> ArimaModel | FitFailed | None:
        """The requested fit once finished — its model, validated, or `FitFailed` — and None while it runs or when
        nothing was requested. Never waits."""
        ...


def run_fit(job: FitJob) -> ArimaModel | FitFailed:
    """`job`'s model, or `FitFailed` when the search failed numerically; any other exception is a bug and propagates."""
    try:
        return job()
    except NUMERIC_FAILURES as exc:
        return FitFailed(f"{exc.__class__.__name__}: {exc}")


class InlineRefits:
    """Fits at once, in the caller: the simulator's scheduler (a run's decisions must not depend on how long a fit
    takes). A numerical failure of the search is a failed fit; any other exception is a bug and propagates. `fit`
    runs the job: `run_fit`, or a `FitCache`'s `fit` (the same models, a fit skipped when asked for before)."""

    def __init__(self, fit: Callable[[FitJob], ArimaModel | FitFailed] = run_fit) -> None:
        self._fit = fit
        self._done: ArimaModel | FitFailed | None = None

    def request(self, job: FitJob) -> None:
        self._done = self._fit(job)

    def collect(self) -> ArimaModel | FitFailed | None:
        done, self._done = self._done, None
        return done
