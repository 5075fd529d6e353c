"""Analyze: forecast the workload (paper §3.3) with auto-ARIMA, a linear fallback and WAPE-driven refits."""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from typing import Any, Protocol

import numpy as np
import pmdarima as pm

from daedalus_spark.config import ForecastConfig
from daedalus_spark.domain import Forecast

# Small search space: the workloads are smooth at 10 s, and every extra order multiplies fit time.
_MAX_P, _MAX_Q, _MAX_D = 3, 3, 2
_MAX_SEASONAL_P, _MAX_SEASONAL_Q = 1, 1
# Iterations for the bounded-window refit; it starts from the previous parameters, so few suffice.
_WINDOW_REFIT_MAXITER = 15
# Float tolerance when mapping sample times to bucket indices.
_EPS = 1e-9


def wape(actual: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray) -> float:
    """Weighted absolute percentage error: sum|a - p| / sum|a|, as a ratio.

    When every actual is zero the ratio is undefined: it is 0.0 if the prediction is zero as well (perfect),
    else +inf (any error against nothing is infinitely bad). An empty pair is therefore 0.0.
    """
    a = np.asarray(actual, dtype=float)
    p = np.asarray(predicted, dtype=float)
    if a.shape != p.shape:
        raise ValueError(f"actual has shape {a.shape}, predicted {p.shape}")
    error = float(np.abs(a - p).sum())
    scale = float(np.abs(a).sum())
    if scale == 0.0:
        return 0.0 if error == 0.0 else math.inf
    return error / scale


class ForecastModel(Protocol):
    """One step = one aggregated sample; predictions are never negative."""

    def fit(self, y: np.ndarray) -> None: ...

    def update(self, y_new: np.ndarray) -> None: ...

    def predict(self, n_steps: int) -> np.ndarray: ...


class ArimaModel:
    """pmdarima auto-ARIMA, updated with new samples; its stored history stays bounded.

    pmdarima's `update` re-estimates on the whole endog, so its cost grows with every tick. Once the stored history
    exceeds twice `window_steps`, the model is re-estimated with the SAME order on the latest `window_steps` only,
    starting from the current parameters (cheap, and the cost stays flat however long the job runs).
    """

    def __init__(self, *, window_steps: int, seasonal_period_steps: int = 0) -> None:
        if window_steps < 1:
            raise ValueError("window_steps must be >= 1")
        self.window_steps = window_steps
        self.seasonal_period_steps = seasonal_period_steps
        self._model: Any = None
        self._y = np.empty(0)

    @property
    def order(self) -> tuple[int, int, int] | None:
        return None if self._model is None else tuple(self._model.order)

    @property
    def history_len(self) -> int:
        return len(self._y)

    def fit(self, y: np.ndarray) -> None:
        y = np.asarray(y, dtype=float)[-self.window_steps:]
        seasonal = self.seasonal_period_steps > 1
        self._model = pm.auto_arima(
            y,
            seasonal=seasonal,
            m=self.seasonal_period_steps if seasonal else 1,
            max_p=_MAX_P, max_q=_MAX_Q, max_d=_MAX_D, max_P=_MAX_SEASONAL_P, max_Q=_MAX_SEASONAL_Q,
            stepwise=True, suppress_warnings=True, error_action="ignore",
        )
        self._y = y.copy()

    def update(self, y_new: np.ndarray) -> None:
        y_new = np.asarray(y_new, dtype=float)
        if self._model is None:
            raise RuntimeError("update() before fit()")
        if y_new.size == 0:
            return
        self._y = np.concatenate([self._y, y_new])
        if len(self._y) > 2 * self.window_steps:
            self._refit_window()
        else:
            self._model.update(y_new)

    def _refit_window(self) -> None:
        old = self._model
        self._y = self._y[-self.window_steps:]
        model = pm.ARIMA(
            order=old.order, seasonal_order=old.seasonal_order, with_intercept=old.with_intercept,
            start_params=old.params(), maxiter=_WINDOW_REFIT_MAXITER, suppress_warnings=True,
        )
        self._model = model.fit(self._y)

    def predict(self, n_steps: int) -> np.ndarray:
        if self._model is None:
            raise RuntimeError("predict() before fit()")
        if n_steps <= 0:
            return np.empty(0)
        values = np.asarray(self._model.predict(n_periods=n_steps), dtype=float)
        # A diverging fit can return non-finite values; a flat forecast at the last level is the safe reading.
        values = np.where(np.isfinite(values), values, self._y[-1] if self._y.size else 0.0)
        return np.clip(values, 0.0, None)


class LinearModel:
    """Least-squares line over the latest `window_steps` samples, extended over the horizon."""

    def __init__(self, *, window_steps: int) -> None:
        if window_steps < 1:
            raise ValueError("window_steps must be >= 1")
        self.window_steps = window_steps
        self._y = np.empty(0)

    def fit(self, y: np.ndarray) -> None:
        self._y = np.asarray(y, dtype=float)[-self.window_steps:].copy()

    def update(self, y_new: np.ndarray) -> None:
        self._y = np.concatenate([self._y, np.asarray(y_new, dtype=float)])[-self.window_steps:]

    def predict(self, n_steps: int) -> np.ndarray:
        if n_steps <= 0:
            return np.empty(0)
        n = len(self._y)
        if n == 0:
            return np.zeros(n_steps)
        if n == 1:
            return np.full(n_steps, max(0.0, float(self._y[0])))
        slope, intercept = np.polyfit(np.arange(n, dtype=float), self._y, 1)
        future_x = np.arange(n, n + n_steps, dtype=float)
        return np.clip(intercept + slope * future_x, 0.0, None)


def fit_arima(y: np.ndarray, *, window_steps: int, seasonal_period_steps: int) -> ArimaModel:
    """A freshly searched auto-ARIMA on `y`; a free function so it can run on any executor."""
    model = ArimaModel(window_steps=window_steps, seasonal_period_steps=seasonal_period_steps)
    model.fit(y)
    return model


class _Buckets:
    """Turns samples of any step into fixed `resolution_s` buckets aligned to absolute time (partial kept)."""

    def __init__(self, resolution_s: float) -> None:
        self.resolution_s = resolution_s
        self.next_index: int | None = None  # the first bucket not yet emitted
        self._sum: dict[int, float] = {}  # records per bucket (rate x covered seconds)
        self._covered_s: dict[int, float] = {}
        self._last_value = 0.0

    def add(self, values: Sequence[float], *, step_s: float, end_s: float) -> list[float]:
        """Add samples ending at `end_s`; return the buckets completed by them, oldest first."""
        n = len(values)
        for i, value in enumerate(values):
            self._spread(float(value), end_s - (n - i) * step_s, end_s - (n - i - 1) * step_s)
        return self._complete_until(end_s)

    def _spread(self, rate: float, t0: float, t1: float) -> None:
        res = self.resolution_s
        first = math.floor(t0 / res + _EPS)
        if self.next_index is None:
            self.next_index = first
        for k in range(first, math.ceil(t1 / res - _EPS)):
            if k < self.next_index:
                continue  # already emitted: a late sample cannot change the past
            overlap = min(t1, (k + 1) * res) - max(t0, k * res)
            if overlap > 0:
                self._sum[k] = self._sum.get(k, 0.0) + rate * overlap
                self._covered_s[k] = self._covered_s.get(k, 0.0) + overlap

    def _complete_until(self, end_s: float) -> list[float]:
        if self.next_index is None:
            return []
        done: list[float] = []
        last_complete = math.floor(end_s / self.resolution_s + _EPS)  # buckets below this index have ended
        for k in range(self.next_index, last_complete):
            covered = self._covered_s.pop(k, 0.0)
            total = self._sum.pop(k, 0.0)
            # A bucket with no sample at all (a monitoring gap) repeats the last level to keep the series regular.
            self._last_value = total / covered if covered > 0 else self._last_value
            done.append(self._last_value)
        self.next_index = max(self.next_index, last_complete)
        return done
