"""Runtime: the refit scheduler — runs the forecaster's requested fits on an Executor, hands back validated models."""

from __future__ import annotations

from concurrent.futures import Executor, Future, wait
from typing import Any

from daedalus_spark.analyze.forecast import ArimaModel, FitFailed, FitJob, fitted_arima_state


class PoolRefits:
    """The forecaster's `RefitScheduler` on a pool: `request` submits and returns at once, `collect` never waits.

    The pool may be another process (runtime/refits.py): the fitted model comes back as data (`ArimaModel.to_json`)
    and is rebuilt and validated here, as a stored one would be; whatever fails on the way is a `FitFailed`.
    """

    def __init__(self, pool: Executor) -> None:
        self.pool = pool
        self._future: Future[dict[str, Any] | None] | None = None
        self._job: FitJob | None = None

    def request(self, job: FitJob) -> None:
        if self._future is not None:
            self._future.cancel()  # dropped: the forecaster asked anew (a restored one asks again)
        self._future = self.pool.submit(fitted_arima_state, job)
        self._job = job

    def collect(self) -> ArimaModel | FitFailed | None:
        future, job = self._future, self._job
        if future is None or job is None or not future.done():
            return None
        self._future = self._job = None
        try:
            return ArimaModel.from_json(
                future.result(), window_steps=job.window_steps, seasonal_period_steps=job.seasonal_period_steps
            )
        except Exception as exc:  # noqa: BLE001 - a failed or damaged fit keeps the old model; the streak asks again
            return FitFailed(f"{exc.__class__.__name__}: {exc}")

    def wait(self, timeout_s: float | None = None) -> None:
        """Block until the requested fit has finished (benchmarks and tests; the loop itself never waits). The
        forecaster swaps it in on its next `observe` or `predict`, as always."""
        if self._future is not None:
            wait([self._future], timeout=timeout_s)
