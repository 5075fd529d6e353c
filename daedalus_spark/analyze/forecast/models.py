"""Analyze: the forecast models — auto-ARIMA with a bounded history and a least-squares line — behind one port."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import pmdarima as pm
from statsmodels.tsa.statespace.sarimax import SARIMAX
from threadpoolctl import ThreadpoolController

from daedalus_spark.analyze.forecast.scoring import holdout_wape
from daedalus_spark.untrusted import Damaged, boolean, field, integer, mapping, number, numbers

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


# Every fit skips the parameters' covariance: forecasts, their intervals and the AIC do not use it, and its SVD
# (statsmodels' OPG estimate) never returned on one 4x4 Hessian with numpy 2.4.6 / OpenBLAS 0.3.31, hanging the
# simulator inside LAPACK where no timeout reaches (found 2026-11-23: a WordCount-like sine, the first refit).
NO_PARAMETER_COVARIANCE: dict[str, Any] = {"cov_type": "none"}
# Bounds on a stored ARIMA: twice the search space, so a tampered order cannot build a huge state space.
_MAX_STORED_ORDER, _MAX_STORED_PARAMS = 6, 64
# Largest magnitude accepted for a stored rate or bucket index (about 3 billion years at 1 s).
MAX_STORED_VALUE = 1e17
# The mean level (records/s) the ARIMA sees its series at, whatever the workload's own: the bundled traces' order of
# magnitude, where its accuracy was measured. Unit level (or unit variance) fitted worse there: WordCount p90 WAPE
# 7.4 % (5.1 %) against 0.9 % (docs/hardening.md, "Bad input").
MODEL_LEVEL = 1e4
# Another candidate replaces the lowest-AIC one only below this share of its hold-out WAPE.
_HOLDOUT_MARGIN_RATIO = 0.8


class ForecastModel(Protocol):
    """The port the forecaster serves forecasts through: one step = one aggregated sample; predictions are never
    negative (tests/contract/test_forecast_models.py holds every implementation to it)."""

    def fit(self, y: np.ndarray) -> None: ...

    def update(self, y_new: np.ndarray) -> None: ...

    def predict(self, n_steps: int) -> np.ndarray: ...

    def predict_interval(self, n_steps: int, level: float | None) -> tuple[np.ndarray, np.ndarray | None]:
        """The point forecast and, when `level` is given, the model's own upper bound at that one-sided level (None
        when the model has none)."""
        ...


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

    def aic(self) -> float:
        """The fitted ARIMA's Akaike information criterion (of the series it filters)."""
        if self._model is None:
            raise RuntimeError("aic() before fit()")
        return float(self._model.aic())

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
                scored = [(holdout_wape(c, y, level, self.select_horizon_steps), i) for i, c in enumerate(candidates)]
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
            field(raw, "y", "arima"), "arima.y", max_len=2 * window_steps, lo=-MAX_STORED_VALUE, hi=MAX_STORED_VALUE
        )
        if not y:
            raise Damaged("arima.y: empty")
        model = cls(window_steps=window_steps, seasonal_period_steps=seasonal_period_steps)
        model._y = np.asarray(y, dtype=float)
        profile = numbers(
            field(raw, "profile", "arima"),
            "arima.profile",
            max_len=window_steps,
            lo=-MAX_STORED_VALUE,
            hi=MAX_STORED_VALUE,
        )
        model._profile = np.asarray(profile, dtype=float)
        model._phase = integer(field(raw, "phase", "arima"), "arima.phase", lo=0, hi=max(0, len(profile) - 1))
        # Stored before the scaling: y in workload units, scale 1.
        model._scale = number(raw.get("scale", 1.0), "arima.scale", lo=1e-12, hi=MAX_STORED_VALUE)
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
    """Least-squares line over the latest `window_steps` samples, extended for as many steps as it was fitted on, then
    held at the level it reached: on noisy load a line's slope over 5 minutes, carried 15 minutes ahead, forecast
    48,000/s where the load stayed near 23,000/s, and the plan went to max_scaleout for 40 minutes."""

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
        future_x = np.minimum(np.arange(n, n + n_steps, dtype=float), 2 * n - 1)
        return np.asarray(np.clip(intercept + slope * future_x, 0.0, None), dtype=float)

    def predict_interval(self, n_steps: int, level: float | None) -> tuple[np.ndarray, np.ndarray | None]:
        """The line and no bound of its own: the forecaster widens it by its measured errors (intervals.py)."""
        return self.predict(n_steps), None


def _scale_of(level: np.ndarray) -> float:
    """Workload units per model unit: the model sees the series at a mean level of MODEL_LEVEL (1 for a series of
    zeros or one that is not finite)."""
    mean = float(np.mean(np.abs(level))) if level.size else 0.0
    return mean / MODEL_LEVEL if math.isfinite(mean) and mean > 0 else 1.0


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
