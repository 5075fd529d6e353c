"""Analyze: forecast the workload (paper §3.3) with auto-ARIMA, a linear fallback and WAPE-driven refits."""

from __future__ import annotations

import functools
import json
import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, wait
from typing import Any, Protocol

import numpy as np
import pmdarima as pm
from statsmodels.tsa.statespace.sarimax import SARIMAX
from statsmodels.tsa.stattools import acf
from threadpoolctl import ThreadpoolController

from daedalus_spark.config import ForecastConfig
from daedalus_spark.domain import Forecast
from daedalus_spark.untrusted import (
    Damaged,
    boolean,
    field,
    integer,
    mapping,
    number,
    numbers,
    optional_number,
)

_log = logging.getLogger(__name__)

# Small search space: the workloads are smooth at 10 s, and every extra order multiplies fit time.
_MAX_P, _MAX_Q, _MAX_D = 3, 3, 2
_MAX_SEASONAL_P, _MAX_SEASONAL_Q = 1, 1
# Iterations for the bounded-window refit; it starts from the previous parameters, so few suffice.
_WINDOW_REFIT_MAXITER = 15
# ARIMA's matrices are tiny: multi-threaded BLAS only adds overhead, and on a shared 2-core machine it made fits
# 10-30x slower (measured: auto-ARIMA on 360 points 33 s vs 2 s single-threaded). threadpoolctl ships with pmdarima.
_BLAS_THREADS = 1
# Finding the loaded BLAS libraries walks every shared object of the process: 11 ms a call, twice a tick. numpy's and
# scipy's are loaded by the imports above, so one look at import serves every later limit.
_THREADPOOLS = ThreadpoolController()


def single_threaded_blas() -> Any:
    """A context in which BLAS runs on one thread (restored on exit)."""
    return _THREADPOOLS.limit(limits=_BLAS_THREADS, user_api="blas")


# Float tolerance when mapping sample times to bucket indices.
_EPS = 1e-9
# What statsmodels raises when a state-space fit or update degenerates (seen: Schur decomposition errors).
_NUMERIC_FAILURES = (np.linalg.LinAlgError, ValueError, FloatingPointError)
# Every fit skips the parameters' covariance: forecasts, their intervals and the AIC do not use it, and its SVD
# (statsmodels' OPG estimate) never returned on one 4x4 Hessian with numpy 2.4.6 / OpenBLAS 0.3.31, hanging the
# simulator inside LAPACK where no timeout reaches (found 2026-11-23: a WordCount-like sine, the first refit).
NO_PARAMETER_COVARIANCE: dict[str, Any] = {"cov_type": "none"}
# Version of the forecaster's stored JSON; another version is relearned, not guessed at.
_STATE_VERSION = 2
# Bounds on a stored ARIMA: twice the search space, so a tampered order cannot build a huge state space.
_MAX_STORED_ORDER, _MAX_STORED_PARAMS = 6, 64
# Largest magnitude accepted for a stored rate or bucket index (about 3 billion years at 1 s).
_MAX_STORED_VALUE = 1e17
# The mean level (records/s) the ARIMA sees its series at, whatever the workload's own: the bundled traces' order of
# magnitude, where its accuracy was measured. Unit level (or unit variance) fitted worse there: WordCount p90 WAPE
# 7.4 % (5.1 %) against 0.9 % (docs/hardening.md, "Bad input, round 2").
MODEL_LEVEL = 1e4


# Seasonality detection (`detect_period`): a period counts when the history holds this many cycles of it...
_MIN_CYCLES = 3
# Empirical intervals: errors of this many recent forecasts per step ahead (30 one-minute ticks: the last half
# hour), and at least this many matured ones at every step before a margin is given at all.
_ERROR_ROWS, _MIN_ERRORS = 30, 5
# Quantile tracking (Angelopoulos, Candes and Tibshirani, "Conformal PID control", 2023): each step ahead's margin
# carries an offset that every matured bound moves by this gain x the step's mean absolute error x (missed - (1 -
# level asked)). Measured on the 6-h traces (docs/forecast.md): gain 0.5 / 1 / 2 covered 86.4 / 88.1 / 89.7 % of
# Traffic and 86.0 / 86.7 / 89.2 % of the sine at the 90 % level; moving the quantile's level instead stayed at
# 77-80 %, since no level of the last 30 errors covers a change that they never saw.
_TRACKING_GAIN = 2.0
# Origins of the hold-out forecasts that pick among auto-ARIMA's candidates, a third of a horizon apart.
_HOLDOUT_ORIGINS = 5
# Another candidate replaces the lowest-AIC one only below this share of its hold-out WAPE.
_HOLDOUT_MARGIN_RATIO = 0.8
# ...and its autocorrelation peak is this high and rises this far above the dip before it (white noise of 360
# samples has |ACF| below 0.15 at 95 %; a sine with noise at SNR 1 peaks near 0.5).
_MIN_PEAK_ACF, _MIN_PEAK_RISE = 0.3, 0.3


def detect_period(y: Sequence[float] | np.ndarray, *, min_cycles: int = _MIN_CYCLES) -> int:
    """The dominant period of `y` in samples from its autocorrelation, 0 when there is none.

    The series is detrended (least-squares line) first, so a ramp does not read as a long period. The period is the
    first local ACF maximum at a lag >= 2 that is at least `_MIN_PEAK_ACF`, outside the 95 % band of white noise,
    and at least `_MIN_PEAK_RISE` above the lowest ACF before it (a real dip between cycles); its lag must fit
    `min_cycles` times in the history.
    """
    x = np.asarray(y, dtype=float)
    n = len(x)
    max_lag = n // min_cycles
    if max_lag < 3 or not np.all(np.isfinite(x)):
        return 0
    t = np.arange(n, dtype=float)
    x = x - np.polyval(np.polyfit(t, x, 1), t)
    if float(np.std(x)) == 0.0:
        return 0
    r = np.asarray(acf(x, nlags=max_lag, fft=True), dtype=float)
    band = 1.96 / math.sqrt(n)
    for lag in range(2, max_lag):
        peak = r[lag]
        if peak < r[lag - 1] or peak < r[lag + 1]:
            continue
        if peak >= max(_MIN_PEAK_ACF, band) and peak - float(np.min(r[1:lag])) >= _MIN_PEAK_RISE:
            return lag
    return 0


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

    With a `profile` (the mean level per phase of a detected period), the ARIMA models the series minus that
    profile, and forecasts add it back: a cheap stand-in for a seasonal ARIMA (see docs/forecast.md).

    The ARIMA sees the series rescaled to a mean level of MODEL_LEVEL at the fit (`scale`), and forecasts are
    multiplied back: the optimizer's tolerances and starting values are absolute, so the same shape at 10^6 times the
    records would otherwise fit another model (docs/hardening.md: p50 WAPE 0.47 % against 2.34 % on WordCount).
    """

    def __init__(self, *, window_steps: int, seasonal_period_steps: int = 0, select_horizon_steps: int = 0) -> None:
        if window_steps < 1:
            raise ValueError("window_steps must be >= 1")
        self.window_steps = window_steps
        self.seasonal_period_steps = seasonal_period_steps
        # > 0: among the models auto-ARIMA's search fitted, keep the one with the lowest WAPE over this many steps
        # ahead from recent origins in the window (the error the planner pays), not the lowest AIC.
        self.select_horizon_steps = select_horizon_steps
        self.holdout_wape: float = math.nan  # that error for the model kept (nan: not measured)
        self._model: Any = None
        self._y = np.empty(0)  # what the ARIMA filters: the series, minus the profile when there is one
        self._profile = np.empty(0)  # mean deviation per phase of the detected period; empty: none
        self._phase = 0  # phase of the next sample within the profile
        self._scale = 1.0  # workload units per model unit: _y and the ARIMA are in model units

    @property
    def detected_period_steps(self) -> int:
        """The period whose profile is removed before the ARIMA (0: none)."""
        return len(self._profile)

    def _seasonal(self, start_phase: int, n: int) -> np.ndarray:
        if not self._profile.size:
            return np.zeros(n)
        return np.asarray(self._profile[(start_phase + np.arange(n)) % len(self._profile)], dtype=float)

    def deseasonalize(self, y: np.ndarray, period_steps: int) -> None:
        """Use the mean profile of `y` over `period_steps` (phase 0 at y[0]) for the next `fit(y)`."""
        n = len(y) // period_steps * period_steps  # whole cycles only, the latest ones
        cycles = np.asarray(y[len(y) - n :], dtype=float).reshape(-1, period_steps)
        profile = cycles.mean(axis=0) - cycles.mean()
        self._profile = np.roll(profile, (len(y) - n) % period_steps)  # re-based so that phase 0 is y[0]
        self._phase = 0

    @property
    def order(self) -> tuple[int, int, int] | None:
        return None if self._model is None else tuple(self._model.order)

    @property
    def history_len(self) -> int:
        return len(self._y)

    def fit(self, y: np.ndarray) -> None:
        raw = np.asarray(y, dtype=float)
        y = raw - self._seasonal(0, len(raw))  # phase 0 is y[0] of the full series handed to deseasonalize
        if self._profile.size:
            self._phase = len(raw) % len(self._profile)
        self._scale = _scale_of(raw[-self.window_steps :])
        level = raw[-self.window_steps :] / self._scale  # the workload's own level, for the hold-out WAPE
        y = y[-self.window_steps :] / self._scale
        seasonal = self.seasonal_period_steps > 1
        select = self.select_horizon_steps > 0
        with single_threaded_blas():
            found = pm.auto_arima(
                y,
                # Always seasonal=True (m=1 means none): with seasonal=False pmdarima 2.0 keeps an intercept even
                # when d = 2, i.e. a quadratic drift over the horizon. Measured on the WordCount sine's hour before
                # 6,000 s: (2,2,2) with intercept, AIC -219, vs (3,2,2) without, AIC -343; it was the main cause
                # of our p90 WAPE losing to plain auto-ARIMA (docs/forecast.md).
                seasonal=True,
                m=self.seasonal_period_steps if seasonal else 1,
                max_p=_MAX_P,
                max_q=_MAX_Q,
                max_d=_MAX_D,
                max_P=_MAX_SEASONAL_P,
                max_Q=_MAX_SEASONAL_Q,
                stepwise=True,
                suppress_warnings=True,
                error_action="ignore",
                return_valid_fits=select,
                **NO_PARAMETER_COVARIANCE,
            )
            if select:
                candidates = list(found) if isinstance(found, Sequence) else [found]
                scored = [(_holdout_wape(c, y, level, self.select_horizon_steps), i) for i, c in enumerate(candidates)]
                # The lowest-AIC candidate (the first) stays unless another forecast the hold-out clearly better.
                self.holdout_wape, best = min(scored)
                if best != 0 and not self.holdout_wape < _HOLDOUT_MARGIN_RATIO * scored[0][0]:
                    self.holdout_wape, best = scored[0]
                found = candidates[best]
        self._model = found
        self._y = y.copy()

    def update(self, y_new: np.ndarray) -> None:
        y_new = np.asarray(y_new, dtype=float)
        if self._model is None:
            raise RuntimeError("update() before fit()")
        if y_new.size == 0:
            return
        if self._profile.size:
            y_new = y_new - self._seasonal(self._phase, len(y_new))
            self._phase = (self._phase + len(y_new)) % len(self._profile)
        y_new = y_new / self._scale
        self._y = np.concatenate([self._y, y_new])
        with single_threaded_blas():
            if len(self._y) > 2 * self.window_steps:
                self._refit_window()
            else:
                self._model.update(y_new, **NO_PARAMETER_COVARIANCE)

    def _refit_window(self) -> None:
        old = self._model
        self._y = self._y[-self.window_steps :]
        model = pm.ARIMA(
            order=old.order,
            seasonal_order=old.seasonal_order,
            with_intercept=old.with_intercept,
            start_params=old.params(),
            maxiter=_WINDOW_REFIT_MAXITER,
            suppress_warnings=True,
        )
        self._model = model.fit(self._y, **NO_PARAMETER_COVARIANCE)

    def to_json(self) -> dict[str, Any] | None:
        """The fitted model as data: order, parameters and the history it filters; None before a fit."""
        if self._model is None:
            return None
        m = self._model
        return {
            "order": [int(v) for v in m.order],
            "seasonal_order": [int(v) for v in m.seasonal_order],
            "with_intercept": bool(m.with_intercept),
            "params": [float(v) for v in m.params()],
            "y": [float(v) for v in self._y],
            "profile": [float(v) for v in self._profile],
            "phase": self._phase,
            "scale": self._scale,
        }

    @classmethod
    def from_json(cls, raw: Any, *, window_steps: int, seasonal_period_steps: int) -> ArimaModel:
        """Rebuild from `to_json` without re-estimating: the stored parameters filter the stored history."""
        raw = mapping(raw, "arima")
        order = _order(field(raw, "order", "arima"), "arima.order", 3)
        seasonal = _order(field(raw, "seasonal_order", "arima"), "arima.seasonal_order", 4, last_hi=window_steps)
        with_intercept = boolean(field(raw, "with_intercept", "arima"), "arima.with_intercept")
        params = numbers(field(raw, "params", "arima"), "arima.params", max_len=_MAX_STORED_PARAMS)
        y = numbers(
            field(raw, "y", "arima"), "arima.y", max_len=2 * window_steps, lo=-_MAX_STORED_VALUE, hi=_MAX_STORED_VALUE
        )
        if not y:
            raise Damaged("arima.y: empty")
        model = cls(window_steps=window_steps, seasonal_period_steps=seasonal_period_steps)
        model._y = np.asarray(y, dtype=float)
        profile = numbers(
            field(raw, "profile", "arima"),
            "arima.profile",
            max_len=window_steps,
            lo=-_MAX_STORED_VALUE,
            hi=_MAX_STORED_VALUE,
        )
        model._profile = np.asarray(profile, dtype=float)
        model._phase = integer(field(raw, "phase", "arima"), "arima.phase", lo=0, hi=max(0, len(profile) - 1))
        # Stored before the scaling: y in workload units, scale 1.
        model._scale = number(raw.get("scale", 1.0), "arima.scale", lo=1e-12, hi=_MAX_STORED_VALUE)
        model._model = _rebuilt_arima(order, seasonal, with_intercept, np.asarray(params), model._y)
        return model

    def predict(self, n_steps: int) -> np.ndarray:
        return self.predict_interval(n_steps, None)[0]

    def predict_interval(self, n_steps: int, level: float | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Point forecast and, when `level` is given, the upper bound of the one-sided `level` prediction interval
        (pmdarima's two-sided interval at alpha = 2 * (1 - level)); the bound is None when it is not finite."""
        if self._model is None:
            raise RuntimeError("predict() before fit()")
        if n_steps <= 0:
            return np.empty(0), None if level is None else np.empty(0)
        upper: np.ndarray | None = None
        with single_threaded_blas():
            if level is None:
                values = np.asarray(self._model.predict(n_periods=n_steps), dtype=float) * self._scale
            else:
                raw_values, conf = self._model.predict(n_periods=n_steps, return_conf_int=True, alpha=2 * (1 - level))
                values = np.asarray(raw_values, dtype=float) * self._scale
                upper = np.asarray(conf, dtype=float)[:, 1] * self._scale
        season = self._seasonal(self._phase, n_steps)
        # A diverging fit can return non-finite values; a flat forecast at the last level is the safe reading.
        last = self._y[-1] * self._scale if self._y.size else 0.0
        values = np.where(np.isfinite(values), values, last) + season
        values = np.asarray(np.clip(values, 0.0, None), dtype=float)
        if upper is not None:
            upper = upper + season
            # Never below the point forecast (clipped at 0); not finite anywhere: no interval rather than a guess.
            upper = np.maximum(upper, values) if np.all(np.isfinite(upper)) else None
        return values, upper


class LinearModel:
    """Least-squares line over the latest `window_steps` samples, extended over the horizon."""

    def __init__(self, *, window_steps: int) -> None:
        if window_steps < 1:
            raise ValueError("window_steps must be >= 1")
        self.window_steps = window_steps
        self._y = np.empty(0)

    def fit(self, y: np.ndarray) -> None:
        self._y = np.asarray(y, dtype=float)[-self.window_steps :].copy()

    def update(self, y_new: np.ndarray) -> None:
        self._y = np.concatenate([self._y, np.asarray(y_new, dtype=float)])[-self.window_steps :]

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
        return np.asarray(np.clip(intercept + slope * future_x, 0.0, None), dtype=float)


def _scale_of(level: np.ndarray) -> float:
    """Workload units per model unit: the model sees the series at a mean level of MODEL_LEVEL (1 for a series of
    zeros or one that is not finite)."""
    mean = float(np.mean(np.abs(level))) if level.size else 0.0
    return mean / MODEL_LEVEL if math.isfinite(mean) and mean > 0 else 1.0


def _holdout_wape(model: Any, y: np.ndarray, level: np.ndarray, horizon_steps: int) -> float:
    """WAPE of `model`'s multi-step forecasts from a few origins late in `y` (its own filtered states, its
    parameters as fitted on all of `y`): the error it would have made forecasting the recent past.

    `level` is the series on the workload's scale (the same as `y` without a profile): the denominator.
    """
    n = len(y)
    h = min(horizon_steps, n // 2)
    origins = [o for o in (n - h - k * max(1, h // 3) for k in range(_HOLDOUT_ORIGINS)) if o >= n // 4]
    if h < 1 or not origins:
        return math.inf
    error = scale = 0.0
    try:
        for o in origins:
            pred = model.arima_res_.get_prediction(start=o, end=o + h - 1, dynamic=True).predicted_mean
            shift = level[o : o + h] - y[o : o + h]  # the profile, when there is one
            forecast = np.clip(np.asarray(pred, dtype=float) + shift, 0.0, None)
            error += float(np.abs(level[o : o + h] - forecast).sum())
            scale += float(np.abs(level[o : o + h]).sum())
    except _NUMERIC_FAILURES:
        return math.inf
    if not math.isfinite(error):
        return math.inf
    return error / scale if scale > 0 else (0.0 if error == 0 else math.inf)


def _order(raw: Any, where: str, length: int, *, last_hi: int = _MAX_STORED_ORDER) -> tuple[int, ...]:
    if not isinstance(raw, list) or len(raw) != length:
        raise Damaged(f"{where}: expected {length} integers")
    his = [_MAX_STORED_ORDER] * (length - 1) + [last_hi if length == 4 else _MAX_STORED_ORDER]
    return tuple(integer(v, f"{where}[{i}]", lo=0, hi=hi) for i, (v, hi) in enumerate(zip(raw, his, strict=False)))


def _rebuilt_arima(
    order: tuple[int, ...], seasonal_order: tuple[int, ...], with_intercept: bool, params: np.ndarray, y: np.ndarray
) -> pm.ARIMA:
    """A fitted pmdarima ARIMA from its parameters: the same SARIMAX pmdarima builds, filtered, not estimated."""
    model = pm.ARIMA(order=order, seasonal_order=seasonal_order, with_intercept=with_intercept, suppress_warnings=True)
    sarimax = SARIMAX(endog=y, order=order, seasonal_order=seasonal_order, trend="c" if with_intercept else None)
    if len(params) != sarimax.k_params:
        raise Damaged(f"arima.params: {len(params)} values, the order needs {sarimax.k_params}")
    with warnings.catch_warnings(), single_threaded_blas():
        warnings.simplefilter("ignore")
        model.arima_res_ = sarimax.filter(params, **NO_PARAMETER_COVARIANCE)
    # What pmdarima's own fit sets besides the results; predict and update read them.
    model.fit_with_exog_ = False
    model.nobs_ = len(y)
    model.pkg_version_ = pm.__version__
    return model


def fit_arima(
    y: np.ndarray,
    *,
    window_steps: int,
    seasonal_period_steps: int,
    detect_season: bool = False,
    select_horizon_steps: int = 0,
) -> ArimaModel:
    """A freshly searched auto-ARIMA on `y`; a free function so it can run on any thread pool.

    With `select_horizon_steps`, each search keeps the candidate with the lowest hold-out WAPE over that many steps
    (`_holdout_wape`) instead of the lowest AIC. With `detect_season` (and no fixed seasonal period), a period found
    by `detect_period` is tried as well: the ARIMA on the series minus its mean profile is kept when its hold-out
    WAPE is lower (without selection: when its AIC, charged 2 per profile value, is lower; both are likelihoods of
    the same series, the profile being a fixed offset).
    """
    model = ArimaModel(
        window_steps=window_steps,
        seasonal_period_steps=seasonal_period_steps,
        select_horizon_steps=select_horizon_steps,
    )
    model.fit(y)
    period = detect_period(y[-window_steps:]) if detect_season and seasonal_period_steps <= 1 else 0
    if period == 0:
        return model
    seasonal = ArimaModel(window_steps=window_steps, seasonal_period_steps=0, select_horizon_steps=select_horizon_steps)
    window = np.asarray(y, dtype=float)[-window_steps:]
    seasonal.deseasonalize(window, period)
    seasonal.fit(window)
    if select_horizon_steps > 0 and math.isfinite(model.holdout_wape):
        return seasonal if seasonal.holdout_wape < model.holdout_wape else model
    if float(seasonal._model.aic()) + 2 * period < float(model._model.aic()):
        return seasonal
    return model


def fitted_arima_state(fit: Callable[[], ArimaModel]) -> dict[str, Any] | None:
    """`fit()`'s model as data: what a background refit returns, so that it may run in another process."""
    return fit().to_json()


class _Buckets:
    """Turns samples of any step into fixed `resolution_s` buckets aligned to absolute time (partial kept)."""

    def __init__(self, resolution_s: float, *, max_gap_steps: int | None = None) -> None:
        self.resolution_s = resolution_s
        # Buckets further back than this are never used (the history keeps fewer); skipping them bounds the work
        # after a long outage or a damaged stored index.
        self.max_gap_steps = max_gap_steps
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
        if self.max_gap_steps is not None and last_complete - self.next_index > self.max_gap_steps:
            self._skip_to(last_complete - self.max_gap_steps)
        elif self.max_gap_steps is not None and self.next_index - last_complete > self.max_gap_steps:
            # The stored position lies far ahead of the clock (another clock, or a damaged file): waiting for it
            # would stop the forecast from learning; start again here.
            self._sum.clear()
            self._covered_s.clear()
            self.next_index = last_complete
        for k in range(self.next_index, last_complete):
            covered = self._covered_s.pop(k, 0.0)
            total = self._sum.pop(k, 0.0)
            # A bucket with no sample at all (a monitoring gap) repeats the last level to keep the series regular.
            self._last_value = total / covered if covered > 0 else self._last_value
            done.append(self._last_value)
        self.next_index = max(self.next_index, last_complete)
        return done

    def _skip_to(self, index: int) -> None:
        for k in [k for k in self._sum if k < index]:
            self._sum.pop(k)
            self._covered_s.pop(k, None)
        self.next_index = index

    def to_json(self) -> dict[str, Any]:
        return {
            "next_index": self.next_index,
            "sum": [[k, v] for k, v in sorted(self._sum.items())],
            "covered_s": [[k, v] for k, v in sorted(self._covered_s.items())],
            "last_value": self._last_value,
        }

    def restore_json(self, raw: Any) -> None:
        raw = mapping(raw, "buckets")
        index = field(raw, "next_index", "buckets")
        limit = int(_MAX_STORED_VALUE)
        self.next_index = None if index is None else integer(index, "buckets.next_index", lo=-limit, hi=limit)
        self._last_value = number(
            field(raw, "last_value", "buckets"), "buckets.last_value", lo=-_MAX_STORED_VALUE, hi=_MAX_STORED_VALUE
        )
        self._sum = self._partial(field(raw, "sum", "buckets"), "buckets.sum", -math.inf)
        self._covered_s = self._partial(field(raw, "covered_s", "buckets"), "buckets.covered_s", 0.0)
        if set(self._sum) != set(self._covered_s) or any(
            v > self.resolution_s + _EPS for v in self._covered_s.values()
        ):
            raise Damaged("buckets: partial sums and covered seconds do not match")
        if self._sum and (self.next_index is None or min(self._sum) < self.next_index):
            raise Damaged("buckets: a partial bucket before the next index")

    def _partial(self, raw: Any, where: str, lo: float) -> dict[int, float]:
        # Only the buckets still open are stored: a handful; a long list is not ours.
        if not isinstance(raw, list) or len(raw) > 1000:
            raise Damaged(f"{where}: expected a short list of [index, value] pairs")
        out: dict[int, float] = {}
        for i, pair in enumerate(raw):
            if not isinstance(pair, list) or len(pair) != 2:
                raise Damaged(f"{where}[{i}]: expected [index, value]")
            k = integer(pair[0], f"{where}[{i}][0]", lo=-int(_MAX_STORED_VALUE), hi=int(_MAX_STORED_VALUE))
            out[k] = number(pair[1], f"{where}[{i}][1]", lo=max(lo, -_MAX_STORED_VALUE), hi=_MAX_STORED_VALUE)
        return out


def column_quantiles(values: np.ndarray, q: float) -> np.ndarray:
    """`np.nanquantile(values, q, axis=0)` (linear method, the same arithmetic to the last bit) for columns that each
    hold at least one finite value, in one sort: numpy's own goes column by column once a NaN is present (18 ms a
    tick for the 90 steps of the default horizon)."""
    ordered = np.sort(values, axis=0)  # NaN sorts last
    valid = np.sum(np.isfinite(values), axis=0)
    virtual = (valid - 1) * np.float64(q)
    below = np.floor(virtual)
    above = virtual >= valid - 1
    previous = np.where(above, valid - 1, below).astype(np.intp)
    following = np.where(above, valid - 1, below + 1).astype(np.intp)
    columns = np.arange(values.shape[1])
    a, b = ordered[previous, columns], ordered[following, columns]
    gamma = virtual - np.where(above, -1.0, below)
    difference = b - a
    result: np.ndarray = a + difference * gamma
    upper = gamma >= 0.5
    result[upper] = (b - difference * (1 - gamma))[upper]
    return result


class _HorizonErrors:
    """Errors (actual - forecast) of a model's recent forecasts, one row per forecast, one column per step ahead;
    nan until that bucket is observed. A quantile per column plus an offset per column widens the point forecast
    into an upper bound. The offset tracks the misses of the bounds given (quantile tracking): a quantile of the
    last 30 errors trails errors that change faster, and the offset makes up for it, so that the share of actuals
    above the bound approaches 1 - `level` (docs/forecast.md)."""

    def __init__(self, name: str, horizon_steps: int, level: float) -> None:
        self.name = name
        self.horizon_steps = horizon_steps
        self.level = level
        self.offsets = np.zeros(horizon_steps)
        self.errors = np.full((_ERROR_ROWS, horizon_steps), np.nan)
        # rows still maturing: (row, first bucket, values, the margin their bound had or None)
        self.open: list[tuple[int, int, np.ndarray, np.ndarray | None]] = []
        self.next_row = 0

    def remember(self, start: int, values: np.ndarray) -> None:
        """Keep a forecast (first bucket `start`) so its errors, and whether its bound held, are measured as its
        buckets arrive."""
        row = self.next_row
        self.next_row = (row + 1) % _ERROR_ROWS
        self.open = [r for r in self.open if r[0] != row and r[1] != start]  # one forecast per first bucket
        self.errors[row, :] = np.nan
        kept = np.asarray(values[: self.horizon_steps], dtype=float).copy()
        self.open.append((row, start, kept, self.margin(len(kept))))

    def forecast_from(self, start: int) -> np.ndarray | None:
        return next((v for _, st, v, _ in self.open if st == start), None)

    def observe(self, first: int, actual: np.ndarray) -> None:
        still_open = []
        for row, start, values, issued in self.open:
            lo, hi = max(first, start), min(first + len(actual), start + len(values))
            if lo < hi:
                steps = slice(lo - start, hi - start)
                errors = actual[lo - first : hi - first] - values[steps]
                self.errors[row, steps] = errors
                if issued is not None:
                    missed = (errors > issued[steps]).astype(float)
                    scale = np.nanmean(np.abs(self.errors[:, steps]), axis=0)  # finite: this row's errors are in
                    self.offsets[steps] += _TRACKING_GAIN * scale * (missed - (1.0 - self.level))
            if first + len(actual) < start + len(values):
                still_open.append((row, start, values, issued))
        self.open = still_open

    def margin(self, n_steps: int) -> np.ndarray | None:
        """The `level` quantile of the errors plus the tracked offset at each of `n_steps` steps (never below 0);
        None until every step has `_MIN_ERRORS` matured errors (no margin rather than an invented one)."""
        if n_steps <= 0:
            return None
        steps = np.minimum(np.arange(n_steps), self.horizon_steps - 1)
        if int(np.min(np.sum(np.isfinite(self.errors), axis=0)[steps])) < _MIN_ERRORS:
            return None
        # Only the columns asked for: each has matured errors, so no all-nan slice (and no warning) is possible.
        margin = column_quantiles(self.errors[:, : int(steps[-1]) + 1], self.level)[steps] + self.offsets[steps]
        return np.maximum(margin, 0.0) if np.all(np.isfinite(margin)) else None

    def to_json(self) -> dict[str, Any]:
        return {
            "errors": [[None if math.isnan(v) else float(v) for v in row] for row in self.errors],
            "open": [
                [row, start, [float(v) for v in values], None if issued is None else [float(v) for v in issued]]
                for row, start, values, issued in self.open
            ],
            "next_row": self.next_row,
            "offsets": [float(v) for v in self.offsets],
        }

    def restore_json(self, raw: Any) -> None:
        where, big = f"forecaster.{self.name}", _MAX_STORED_VALUE
        raw = mapping(raw, where)
        rows = field(raw, "errors", where)
        if not isinstance(rows, list) or len(rows) != _ERROR_ROWS:
            raise Damaged(f"{where}.errors: expected {_ERROR_ROWS} rows")
        errors = np.full((_ERROR_ROWS, self.horizon_steps), np.nan)
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != self.horizon_steps:
                raise Damaged(f"{where}.errors[{i}]: expected {self.horizon_steps} values (another horizon_s?)")
            errors[i] = [math.nan if v is None else number(v, f"{where}.errors[{i}]", lo=-big, hi=big) for v in row]
        open_rows = field(raw, "open", where)
        if not isinstance(open_rows, list) or len(open_rows) > _ERROR_ROWS:
            raise Damaged(f"{where}.open: expected at most {_ERROR_ROWS} rows")
        restored: list[tuple[int, int, np.ndarray, np.ndarray | None]] = []
        for i, item in enumerate(open_rows):
            if not isinstance(item, list) or len(item) not in (3, 4):  # 3: stored before the bounds were checked
                raise Damaged(f"{where}.open[{i}]: expected [row, start, values, margin]")
            row = integer(item[0], f"{where}.open[{i}][0]", lo=0, hi=_ERROR_ROWS - 1)
            start = integer(item[1], f"{where}.open[{i}][1]", lo=-int(big), hi=int(big))
            values = numbers(item[2], f"{where}.open[{i}][2]", max_len=self.horizon_steps, lo=0.0, hi=big)
            issued = None
            if len(item) == 4 and item[3] is not None:
                margin = numbers(item[3], f"{where}.open[{i}][3]", max_len=len(values), lo=0.0, hi=big)
                if len(margin) != len(values):
                    raise Damaged(f"{where}.open[{i}][3]: expected {len(values)} margins, one per value")
                issued = np.asarray(margin, dtype=float)
            restored.append((row, start, np.asarray(values, dtype=float), issued))
        offsets = np.zeros(self.horizon_steps)  # none stored before the bounds were tracked
        if "offsets" in raw:
            stored = numbers(raw["offsets"], f"{where}.offsets", max_len=self.horizon_steps, lo=-big, hi=big)
            if len(stored) != self.horizon_steps:
                raise Damaged(f"{where}.offsets: expected {self.horizon_steps} offsets (another horizon_s?)")
            offsets = np.asarray(stored, dtype=float)
        self.errors, self.open, self.offsets = errors, restored, offsets
        self.next_row = integer(field(raw, "next_row", where), f"{where}.next_row", lo=0, hi=_ERROR_ROWS - 1)


class WorkloadForecaster:
    """The §3.3 policy: auto-ARIMA updated every tick, judged by WAPE, linear fallback, refit after a poor streak.

    Every `predict` also computes the ARIMA forecast when a model exists, even while the linear fallback is
    returned: the next tick scores that ARIMA forecast, so the fallback ends as soon as ARIMA is good again and the
    poor streak counts ARIMA's quality only (the paper's "TSF predictions are consistently poor").
    """

    def __init__(self, config: ForecastConfig, *, refit_pool: Executor | None = None) -> None:
        self._config = config
        self._refit_pool = refit_pool
        res = config.resolution_s
        self._res = res
        self._window_steps = max(2, round(config.history_window_s / res))
        self._min_steps = max(2, math.ceil(config.min_history_s / res))
        self._linear_steps = max(2, round(config.linear_window_s / res))
        self._season_steps = round(config.seasonal_period_s / res) if config.seasonal_period_s > 0 else 0
        self._keep_steps = max(self._window_steps, self._min_steps, self._linear_steps)
        self._select_steps = max(1, math.ceil(config.horizon_s / res)) if config.select_by_horizon else 0
        self._refit_every_steps = round(config.refit_interval_s / res) if config.refit_interval_s > 0 else 0
        self._buckets = _Buckets(res, max_gap_steps=self._keep_steps)
        self._history = np.empty(0)
        self._arima: ArimaModel | None = None
        self._pending: Future[dict[str, Any] | None] | None = None
        self._pending_updates: list[float] = []
        self._pending_is_refit = False
        self._scored_forecast: tuple[int, np.ndarray, bool] | None = None  # (first bucket, values, is_arima)
        self._last_wape: float | None = None
        self._last_poor = False
        self._poor_streak = 0
        self._refits = 0
        self._refit_failures = 0
        self._steps_since_fit = 0  # buckets observed since the latest (re)fit was submitted
        # Recent errors of each model's forecasts per step ahead: the linear fallback's interval, and the check on
        # ARIMA's own interval (which assumes the model is right; docs/forecast.md has its measured coverage).
        horizon_steps = max(1, math.ceil(config.horizon_s / res)) + 1
        self._linear_errors = _HorizonErrors("linear_errors", horizon_steps, config.interval_level)
        self._arima_errors = _HorizonErrors("arima_errors", horizon_steps, config.interval_level)

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

    def wait_for_refit(self, timeout_s: float | None = None) -> None:
        """Block until a background refit has finished (benchmarks and tests; the loop itself never waits). The
        model is swapped in by the next `observe` or `predict`, as always."""
        if self._pending is not None:
            wait([self._pending], timeout=timeout_s)

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
            self._linear_errors.observe(first, values)
            self._arima_errors.observe(first, values)
            self._history = np.concatenate([self._history, values])[-self._keep_steps :]
            self._steps_since_fit += len(values)
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
        level = self._config.interval_level
        arima = self._arima
        predicted = self._guarded(arima.predict_interval, n_steps, level) if arima is not None else None
        arima_values = None if predicted is None else predicted[0]
        # The linear forecast is computed every tick (a line through a few dozen points): its errors give its interval.
        linear = LinearModel(window_steps=self._linear_steps)
        linear.fit(self._history)
        linear_values = linear.predict(n_steps)
        self._linear_errors.remember(start, linear_values)
        if arima_values is not None:
            self._arima_errors.remember(start, arima_values)
        upper: np.ndarray | None
        if predicted is not None and arima is not None and not self._last_poor:
            values, upper = predicted
            # Our own recent errors, once there are enough, rather than the model's interval: pmdarima's bound is
            # one error size at every load level (on the Traffic trace it stayed near 30,000/s at a load of 2,600/s,
            # and the planner kept 3 executors where 1 carried the load).
            margin = self._arima_errors.margin(len(values))
            if margin is not None:
                upper = values + margin
            period = arima.detected_period_steps
            model = f"arima+season{period * self._res:g}s" if period else "arima"
        else:
            margin = self._linear_errors.margin(len(linear_values))
            values, upper, model = linear_values, None if margin is None else linear_values + margin, "linear"
        scored = (start, arima_values, True) if arima_values is not None else (start, values, False)
        self._scored_forecast = scored
        return Forecast(
            start_s=start * self._res,
            step_s=self._res,
            values_per_s=tuple(float(v) for v in values),
            model=model,
            upper_per_s=() if upper is None else tuple(float(v) for v in upper),
        )

    @property
    def detected_period_s(self) -> float:
        """Period of the seasonal profile the current ARIMA removes (0: none)."""
        return 0.0 if self._arima is None else self._arima.detected_period_steps * self._res

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
        self._last_wape = wape(actual[lo - first : hi - first], predicted[lo - start : hi - start])
        if not is_arima:
            return  # the linear forecast before ARIMA exists is scored for reporting only
        poor = self._last_wape > self._config.wape_threshold_ratio
        self._poor_streak = self._poor_streak + 1 if poor else 0
        # Fall back only when the line forecast the same buckets better: a poor ARIMA is not enough, since the
        # line's 15-min extrapolation is often worse still (traffic, first 3 h: p90 WAPE 81 % vs 75 % without).
        linear = self._linear_errors.forecast_from(start)
        linear_wape = math.inf
        if linear is not None and lo - start < len(linear):
            end = min(hi - start, len(linear))
            linear_wape = wape(actual[lo - first : start + end - first], linear[lo - start : end])
        self._last_poor = poor and linear_wape < self._last_wape

    def _maybe_fit(self) -> None:
        if self._pending is not None:
            return
        if self._arima is None and len(self._history) >= self._min_steps:
            self._submit(refit=False)
        elif self._arima is not None and (
            self._poor_streak >= self._config.poor_forecasts_before_refit
            or 0 < self._refit_every_steps <= self._steps_since_fit
        ):
            self._submit(refit=True)

    def _submit(self, *, refit: bool) -> None:
        y = self._history[-self._window_steps :].copy()  # a private copy: the job may run on another thread
        self._steps_since_fit = 0
        fit = functools.partial(
            fit_arima,
            y,
            window_steps=self._window_steps,
            seasonal_period_steps=self._season_steps,
            detect_season=self._config.seasonality,
            select_horizon_steps=self._select_steps,
        )
        if self._refit_pool is None:
            try:
                model = fit()
            except _NUMERIC_FAILURES:
                self._refit_failures += 1
                return
            self._install(model, refit=refit)
            return
        # The pool may be another process: the fitted model comes back as data (ArimaModel.to_json) and is rebuilt
        # and validated here, as a stored one would be.
        self._pending = self._refit_pool.submit(fitted_arima_state, fit)
        self._pending_updates = []
        self._pending_is_refit = refit

    def _swap_if_done(self) -> None:
        future = self._pending
        if future is None or not future.done():
            return  # never wait: the old model (or the fallback) serves until the new one is ready
        self._pending = None
        updates, self._pending_updates = np.asarray(self._pending_updates, dtype=float), []
        try:
            model = ArimaModel.from_json(
                future.result(), window_steps=self._window_steps, seasonal_period_steps=self._season_steps
            )
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
        """Everything learned as JSON data (no code); a refit still running is dropped (and resubmitted later)."""
        scored = self._scored_forecast
        state = {
            "version": _STATE_VERSION,
            "resolution_s": self._res,
            "buckets": self._buckets.to_json(),
            "history": [float(v) for v in self._history],
            "arima": None if self._arima is None else self._arima.to_json(),
            "scored_forecast": None
            if scored is None
            else {
                "start": scored[0],
                "values": [float(v) for v in scored[1]],
                "is_arima": scored[2],
            },
            "last_wape": self._last_wape,
            "last_poor": self._last_poor,
            "poor_streak": self._poor_streak,
            "refits": self._refits,
            "refit_failures": self._refit_failures,
            "steps_since_fit": self._steps_since_fit,
            "linear_errors": self._linear_errors.to_json(),
            "arima_errors": self._arima_errors.to_json(),
        }
        # A WAPE against an all-zero window is +inf; JSON has no infinity, so it is written as null-with-a-flag.
        if self._last_wape is not None and math.isinf(self._last_wape):
            state["last_wape"], state["last_wape_infinite"] = None, True
        return json.dumps(state, allow_nan=False, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(
        cls, data: bytes, config: ForecastConfig, *, refit_pool: Executor | None = None
    ) -> WorkloadForecaster:
        """Restore from `to_bytes`; the input is untrusted: anything malformed raises `ValueError` naming it.

        Thresholds come from `config`. An ARIMA that cannot be rebuilt is dropped with a warning and refitted from
        the restored history; the rest of the forecaster is kept.
        """
        try:
            raw = mapping(json.loads(data.decode("utf-8")), "forecaster")
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise Damaged(f"forecaster: not our JSON ({exc.__class__.__name__})") from None
        if field(raw, "version", "forecaster") != _STATE_VERSION:
            raise Damaged(
                f"forecaster: unknown stored version {raw['version']!r:.20} (this WorkloadForecaster reads version "
                f"{_STATE_VERSION})"
            )
        stored_res = number(field(raw, "resolution_s", "forecaster"), "forecaster.resolution_s")
        if stored_res != config.resolution_s:
            raise ValueError(f"stored forecaster uses resolution_s={stored_res}, config has {config.resolution_s}")
        forecaster = cls(config, refit_pool=refit_pool)
        forecaster._restore_fields(raw)
        forecaster._restore_arima(field(raw, "arima", "forecaster"))
        return forecaster

    def _restore_fields(self, raw: Mapping[str, Any]) -> None:
        big = _MAX_STORED_VALUE
        self._buckets.restore_json(field(raw, "buckets", "forecaster"))
        history = numbers(
            field(raw, "history", "forecaster"),
            "forecaster.history",
            max_len=10 * self._keep_steps + 10,
            lo=-big,
            hi=big,
        )
        self._history = np.asarray(history, dtype=float)[-self._keep_steps :]
        self._scored_forecast = self._restored_scored(field(raw, "scored_forecast", "forecaster"))
        self._last_wape = optional_number(field(raw, "last_wape", "forecaster"), "forecaster.last_wape", lo=0.0)
        if raw.get("last_wape_infinite") is True:
            self._last_wape = math.inf
        self._last_poor = boolean(field(raw, "last_poor", "forecaster"), "forecaster.last_poor")
        counters = {
            k: integer(field(raw, k, "forecaster"), f"forecaster.{k}", lo=0, hi=2**53)
            for k in ("poor_streak", "refits", "refit_failures")
        }
        self._poor_streak, self._refits, self._refit_failures = (
            counters["poor_streak"],
            counters["refits"],
            counters["refit_failures"],
        )
        self._steps_since_fit = integer(
            field(raw, "steps_since_fit", "forecaster"), "forecaster.steps_since_fit", lo=0, hi=2**53
        )
        self._linear_errors.restore_json(field(raw, "linear_errors", "forecaster"))
        self._arima_errors.restore_json(field(raw, "arima_errors", "forecaster"))

    def _restored_scored(self, raw: Any) -> tuple[int, np.ndarray, bool] | None:
        if raw is None:
            return None
        raw = mapping(raw, "forecaster.scored_forecast")
        where = "forecaster.scored_forecast"
        start = integer(
            field(raw, "start", where), f"{where}.start", lo=-int(_MAX_STORED_VALUE), hi=int(_MAX_STORED_VALUE)
        )
        values = numbers(field(raw, "values", where), f"{where}.values", max_len=100_000, lo=0.0, hi=_MAX_STORED_VALUE)
        return start, np.asarray(values, dtype=float), boolean(field(raw, "is_arima", where), f"{where}.is_arima")

    def _restore_arima(self, raw: Any) -> None:
        if raw is None:
            return
        try:
            self._arima = ArimaModel.from_json(
                raw, window_steps=self._window_steps, seasonal_period_steps=self._season_steps
            )
        except (Damaged, *_NUMERIC_FAILURES) as exc:
            _log.warning("stored ARIMA model dropped, refitting it from the stored history: %s", exc)
            self._arima = None
            self._last_poor = False
            self._poor_streak = 0
            self._scored_forecast = None
