"""Analyze: forecast the workload (paper §3.3) with auto-ARIMA, a linear fallback and WAPE-driven refits."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any, Protocol

import numpy as np
import pmdarima as pm
from threadpoolctl import threadpool_limits

from daedalus_spark.config import ForecastConfig
from daedalus_spark.domain import Forecast

# Small search space: the workloads are smooth at 10 s, and every extra order multiplies fit time.
_MAX_P, _MAX_Q, _MAX_D = 3, 3, 2
_MAX_SEASONAL_P, _MAX_SEASONAL_Q = 1, 1
# Iterations for the bounded-window refit; it starts from the previous parameters, so few suffice.
_WINDOW_REFIT_MAXITER = 15
# ARIMA's matrices are tiny: multi-threaded BLAS only adds overhead, and on a shared 2-core machine it made fits
# 10-30x slower (measured: auto-ARIMA on 360 points 33 s vs 2 s single-threaded). threadpoolctl ships with pmdarima.
_BLAS_THREADS = 1
# Float tolerance when mapping sample times to bucket indices.
_EPS = 1e-9
# What statsmodels raises when a state-space fit or update degenerates (seen: Schur decomposition errors).
_NUMERIC_FAILURES = (np.linalg.LinAlgError, ValueError, FloatingPointError)


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
        with threadpool_limits(limits=_BLAS_THREADS, user_api="blas"):
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
        with threadpool_limits(limits=_BLAS_THREADS, user_api="blas"):
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
        with threadpool_limits(limits=_BLAS_THREADS, user_api="blas"):
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


class WorkloadForecaster:
    """The §3.3 policy: auto-ARIMA updated every tick, judged by WAPE, linear fallback, refit after a poor streak.

    Every `predict` also computes the ARIMA forecast when a model exists, even while the linear fallback is
    returned: the next tick scores that ARIMA forecast, so the fallback ends as soon as ARIMA is good again and the
    poor streak counts ARIMA's quality only (the paper's "TSF predictions are consistently poor").
    """

    def __init__(self, config: ForecastConfig, *, refit_executor: Executor | None = None) -> None:
        self._config = config
        self._executor = refit_executor
        res = config.resolution_s
        self._res = res
        self._window_steps = max(2, round(config.history_window_s / res))
        self._min_steps = max(2, math.ceil(config.min_history_s / res))
        self._linear_steps = max(2, round(config.linear_window_s / res))
        self._season_steps = round(config.seasonal_period_s / res) if config.seasonal_period_s > 0 else 0
        self._keep_steps = max(self._window_steps, self._min_steps, self._linear_steps)
        self._buckets = _Buckets(res)
        self._history = np.empty(0)
        self._arima: ArimaModel | None = None
        self._pending: Future[ArimaModel] | None = None
        self._pending_updates: list[float] = []
        self._pending_is_refit = False
        self._scored_forecast: tuple[int, np.ndarray, bool] | None = None  # (first bucket, values, is_arima)
        self._last_wape: float | None = None
        self._last_poor = False
        self._poor_streak = 0
        self._refits = 0
        self._refit_failures = 0

    # --- reporting -------------------------------------------------------------------------------------------

    @property
    def last_wape(self) -> float | None:
        """WAPE of the previous forecast (ARIMA's when one exists) over the buckets seen since; None before any."""
        return self._last_wape

    @property
    def poor_streak(self) -> int:
        return self._poor_streak

    @property
    def refits(self) -> int:
        """Refits swapped in (the initial fit not counted)."""
        return self._refits

    @property
    def using_fallback(self) -> bool:
        """Whether the next `predict` returns the linear forecast."""
        return self._arima is None or self._last_poor

    @property
    def refit_failures(self) -> int:
        """Background fits that raised; the old model (or the fallback) kept serving."""
        return self._refit_failures

    @property
    def refit_pending(self) -> bool:
        return self._pending is not None

    @property
    def history_steps(self) -> int:
        return len(self._history)

    @property
    def arima_order(self) -> tuple[int, int, int] | None:
        return None if self._arima is None else self._arima.order

    # --- the tick --------------------------------------------------------------------------------------------

    def observe(self, workload_per_s: Sequence[float], *, step_s: float, end_s: float) -> None:
        """Add the raw samples since the last tick (oldest first, one per `step_s`, the last ending at `end_s`)."""
        if step_s <= 0:
            raise ValueError(f"step_s must be > 0, got {step_s}")
        new = self._buckets.add(workload_per_s, step_s=step_s, end_s=end_s)
        self._swap_if_done()
        if new:
            assert self._buckets.next_index is not None
            first = self._buckets.next_index - len(new)
            values = np.asarray(new, dtype=float)
            self._score(first, values)
            self._history = np.concatenate([self._history, values])[-self._keep_steps:]
            if self._arima is not None:
                self._guarded(self._arima.update, values)
            if self._pending is not None:
                self._pending_updates.extend(new)
        self._maybe_fit()

    def predict(self, now_s: float, horizon_s: float | None = None) -> Forecast:
        """Workload from the first bucket not yet observed until at least `now_s + horizon`."""
        horizon = self._config.horizon_s if horizon_s is None else horizon_s
        self._swap_if_done()
        next_index = self._buckets.next_index
        start = math.floor(now_s / self._res + _EPS) if next_index is None else next_index
        n_steps = max(1, math.ceil((now_s + horizon - start * self._res) / self._res - _EPS))
        arima_values = self._guarded(self._arima.predict, n_steps) if self._arima is not None else None
        if arima_values is not None and not self._last_poor:
            values, model = arima_values, "arima"
        else:
            linear = LinearModel(window_steps=self._linear_steps)
            linear.fit(self._history)
            values, model = linear.predict(n_steps), "linear"
        scored = (start, arima_values, True) if arima_values is not None else (start, values, False)
        self._scored_forecast = scored
        return Forecast(
            start_s=start * self._res, step_s=self._res, values_per_s=tuple(float(v) for v in values), model=model
        )

    # --- internals -------------------------------------------------------------------------------------------

    def _score(self, first: int, actual: np.ndarray) -> None:
        """Judge the previous forecast once, on the first buckets it covers."""
        if self._scored_forecast is None:
            return
        start, predicted, is_arima = self._scored_forecast
        lo, hi = max(first, start), min(first + len(actual), start + len(predicted))
        if lo >= hi:
            return
        self._scored_forecast = None
        self._last_wape = wape(actual[lo - first:hi - first], predicted[lo - start:hi - start])
        if not is_arima:
            return  # the linear forecast before ARIMA exists is scored for reporting only
        self._last_poor = self._last_wape > self._config.wape_threshold_ratio
        self._poor_streak = self._poor_streak + 1 if self._last_poor else 0

    def _maybe_fit(self) -> None:
        if self._pending is not None:
            return
        if self._arima is None and len(self._history) >= self._min_steps:
            self._submit(refit=False)
        elif self._arima is not None and self._poor_streak >= self._config.poor_forecasts_before_refit:
            self._submit(refit=True)

    def _submit(self, *, refit: bool) -> None:
        y = self._history[-self._window_steps:].copy()  # a private copy: the job may run on another thread
        if self._executor is None:
            try:
                model = fit_arima(y, window_steps=self._window_steps, seasonal_period_steps=self._season_steps)
            except _NUMERIC_FAILURES:
                self._refit_failures += 1
                return
            self._install(model, refit=refit)
            return
        self._pending = self._executor.submit(
            fit_arima, y, window_steps=self._window_steps, seasonal_period_steps=self._season_steps
        )
        self._pending_updates = []
        self._pending_is_refit = refit

    def _swap_if_done(self) -> None:
        future = self._pending
        if future is None or not future.done():
            return  # never wait: the old model (or the fallback) serves until the new one is ready
        self._pending = None
        updates, self._pending_updates = np.asarray(self._pending_updates, dtype=float), []
        try:
            model = future.result()
            model.update(updates)  # the buckets that arrived while it was fitting
        except Exception:  # noqa: BLE001 - a failed fit keeps the old model; the streak resubmits later
            self._refit_failures += 1
            return
        self._install(model, refit=self._pending_is_refit)

    def _guarded(self, operation: Callable[..., Any], *args: Any) -> Any:
        """Run an ARIMA operation; a numerical failure drops the model (linear fallback, then a fresh fit)."""
        try:
            return operation(*args)
        except _NUMERIC_FAILURES:
            self._arima = None
            self._refit_failures += 1
            return None

    def _install(self, model: ArimaModel, *, refit: bool) -> None:
        self._arima = model
        self._refits += int(refit)
        self._poor_streak = 0
        self._last_poor = False
        self._scored_forecast = None  # a forecast of the replaced model says nothing about the new one

    # --- persistence -----------------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """Everything learned, for the knowledge store; a refit still running is dropped (and resubmitted later)."""
        state = {k: v for k, v in self.__dict__.items() if k not in _TRANSIENT}
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def from_bytes(
        cls, data: bytes, config: ForecastConfig, *, refit_executor: Executor | None = None
    ) -> WorkloadForecaster:
        """Restore from `to_bytes` (trusted input: our own knowledge store). Thresholds come from `config`."""
        state = pickle.loads(data)  # noqa: S301 - written by to_bytes into the controller's own store
        stored_config: ForecastConfig = state["_config"]
        if stored_config.resolution_s != config.resolution_s:
            raise ValueError(
                f"stored forecaster uses resolution_s={stored_config.resolution_s}, config has {config.resolution_s}"
            )
        forecaster = cls(config, refit_executor=refit_executor)
        fresh = {k: forecaster.__dict__[k] for k in _CONFIG_DERIVED}
        forecaster.__dict__.update(state)
        forecaster.__dict__.update(fresh)
        forecaster._history = forecaster._history[-forecaster._keep_steps:]
        return forecaster


# Not persisted: the executor and a running job belong to this process only.
_TRANSIENT = frozenset({"_executor", "_pending", "_pending_updates", "_pending_is_refit"})
# Taken from the config given at restore time, not from the stored state.
_CONFIG_DERIVED = (
    "_config", "_window_steps", "_min_steps", "_linear_steps", "_season_steps", "_keep_steps",
)
