"""Contract: every RefitScheduler (inline for the simulator, on a pool for the sidecar) hands back the model the job
fits, validated, once; a failed fit comes back as FitFailed, never as an exception in the tick."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import ArimaModel, FitFailed, FitJob, InlineRefits, RefitScheduler
from daedalus_spark.runtime.refit_scheduler import PoolRefits


@dataclass(frozen=True)
class DivergingJob(FitJob):
    """A fit whose search degenerates (statsmodels raises LinAlgError or ValueError then)."""

    def __call__(self) -> ArimaModel:
        raise ValueError("Schur decomposition solver error.")


def _settle(scheduler: RefitScheduler) -> None:
    """Let a background fit finish (the loop itself never waits; a test may)."""
    if isinstance(scheduler, PoolRefits):
        scheduler.wait(timeout_s=300)


@pytest.fixture(params=["inline", "thread-pool"])
def scheduler(request: pytest.FixtureRequest) -> Iterator[RefitScheduler]:
    if request.param == "inline":
        yield InlineRefits()
        return
    with ThreadPoolExecutor(1) as pool:
        yield PoolRefits(pool)


def _job(cls: Callable[..., FitJob] = FitJob) -> FitJob:
    y = 1000 + 200 * np.sin(np.arange(60) / 6) + np.random.default_rng(2).normal(0, 5, 60)
    return cls(y, window_steps=60, seasonal_period_steps=0)


def test_nothing_to_collect_before_a_request(scheduler: RefitScheduler) -> None:
    assert scheduler.collect() is None


def test_the_collected_model_is_the_one_the_job_fits_and_comes_once(scheduler: RefitScheduler) -> None:
    job = _job()
    scheduler.request(job)
    _settle(scheduler)
    model = scheduler.collect()
    assert isinstance(model, ArimaModel)
    direct = job()
    assert model.order == direct.order
    np.testing.assert_allclose(model.predict(10), direct.predict(10), rtol=1e-9)
    assert scheduler.collect() is None  # handed back once


def test_a_diverging_fit_comes_back_as_fit_failed(scheduler: RefitScheduler) -> None:
    scheduler.request(_job(DivergingJob))
    _settle(scheduler)
    failed = scheduler.collect()
    assert isinstance(failed, FitFailed) and "Schur" in failed.reason


def test_a_new_request_drops_the_one_not_collected(scheduler: RefitScheduler) -> None:
    """A restored forecaster asks afresh: whatever the earlier request gives is never handed back."""
    scheduler.request(_job(DivergingJob))
    scheduler.request(_job())
    _settle(scheduler)
    assert isinstance(scheduler.collect(), ArimaModel)
    assert scheduler.collect() is None
