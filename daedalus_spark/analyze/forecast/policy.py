"""Analyze: the §3.3 forecast policy — WAPE-judged ARIMA, the linear fallback, and when to ask for a refit."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from daedalus_spark.analyze.forecast.codec import Learned, decode, encode
from daedalus_spark.analyze.forecast.fitting import FitJob
from daedalus_spark.analyze.forecast.intervals import HorizonErrors
from daedalus_spark.analyze.forecast.models import ArimaModel, ForecastModel, LinearModel
from daedalus_spark.analyze.forecast.refit import FitFailed, InlineRefits, RefitScheduler
from daedalus_spark.analyze.forecast.resample import EPS, Buckets
from daedalus_spark.analyze.forecast.scoring import NUMERIC_FAILURES, wape
from daedalus_spark.domain import Forecast

if TYPE_CHECKING:  # the config's pydantic models stay out of the refit process, which imports this package
    from daedalus_spark.config import ForecastConfig


class WorkloadForecaster:
    """The §3.3 policy: auto-ARIMA updated every tick, judged by WAPE, linear fallback, refit after a poor streak.

    Every `predict` also computes the ARIMA forecast when a model exists, even while the linear fallback is
    returned: the next tick scores that ARIMA forecast, so the fallback ends as soon as ARIMA is good again and the
    poor streak counts ARIMA's quality only (the paper's "TSF predictions are consistently poor").

    Fits go through `refits` (inline when None); a fit requested in the background never blocks a tick: the old
    model (or the fallback) serves until the new one is collected.
    """

    def __init__(self, config: ForecastConfig, *, refits: RefitScheduler | None = None) -> None:
        self._config = config
        self._refits: RefitScheduler = InlineRefits() if refits is None else refits
        res = config.resolution_s
        self._res = res
        self._window_steps = max(2, round(config.history_window_s / res))
        self._min_steps = max(2, math.ceil(config.min_history_s / res))
        self._linear_steps = max(2, round(config.linear_window_s / res))
        self._season_steps = round(config.seasonal_period_s / res) if config.seasonal_period_s > 0 else 0
        self._keep_steps = max(self._window_steps, self._min_steps, self._linear_steps)
        self._select_steps = max(1, math.ceil(config.horizon_s / res)) if config.select_by_horizon else 0
        self._refit_every_steps = round(config.refit_interval_s / res) if config.refit_interval_s > 0 else 0
        # Recent errors of each model's forecasts per step ahead: the linear fallback's interval, and the check on
        # ARIMA's own interval (which assumes the model is right; docs/forecast.md has its measured coverage).
        horizon_steps = max(1, math.ceil(config.horizon_s / res)) + 1
        self._learned = Learned(
            buckets=Buckets(res, max_gap_steps=self._keep_steps),
            linear_errors=HorizonErrors("linear_errors", horizon_steps, config.interval_level),
            arima_errors=HorizonErrors("arima_errors", horizon_steps, config.interval_level),
        )
        # The two models behind the ForecastModel port: the ARIMA (fitted through `refits`, kept in `_learned`
        # because its parameters are stored) and the line, refitted on the history every tick.
        self._linear: ForecastModel = LinearModel(window_steps=self._linear_steps)
        self._pending = False  # a fit requested and not yet collected
        self._pending_updates: list[float] = []  # buckets observed since: the new model is given them
        self._pending_is_refit = False

    # --- reporting -------------------------------------------------------------------------------------------

    @property
    def last_wape(self) -> float | None:
        """WAPE of the previous forecast (ARIMA's when one exists) over the buckets seen since; None before any."""
        return self._learned.last_wape

    @property
    def poor_streak(self) -> int:
        return self._learned.poor_streak

    @property
    def refits(self) -> int:
        """Refits swapped in (the initial fit not counted)."""
        return self._learned.refits

    @property
    def using_fallback(self) -> bool:
        """Whether the next `predict` returns the linear forecast."""
        return self._learned.arima is None or self._learned.last_poor

    @property
    def refit_failures(self) -> int:
        """Fits that raised or came back damaged; the old model (or the fallback) kept serving."""
        return self._learned.refit_failures

    @property
    def refit_pending(self) -> bool:
        """Whether a requested fit has not been collected yet."""
        return self._pending

    @property
    def history_steps(self) -> int:
        return len(self._learned.history)

    @property
    def arima_order(self) -> tuple[int, int, int] | None:
        return None if self._learned.arima is None else self._learned.arima.order

    @property
    def detected_period_s(self) -> float:
        """Period of the seasonal profile the current ARIMA removes (0: none)."""
        return 0.0 if self._learned.arima is None else self._learned.arima.detected_period_steps * self._res

    # --- the tick --------------------------------------------------------------------------------------------

    def observe(self, workload_per_s: Sequence[float], *, step_s: float, end_s: float) -> None:
        """Add the raw samples since the last tick (oldest first, one per `step_s`, the last ending at `end_s`)."""
        if step_s <= 0:
            raise ValueError(f"step_s must be > 0, got {step_s}")
        s = self._learned
        new = s.buckets.add(workload_per_s, step_s=step_s, end_s=end_s)
        self._collect()
        if new:
            assert s.buckets.next_index is not None
            first = s.buckets.next_index - len(new)
            values = np.asarray(new, dtype=float)
            self._score(first, values)
            s.linear_errors.observe(first, values)
            s.arima_errors.observe(first, values)
            s.history = np.concatenate([s.history, values])[-self._keep_steps :]
            s.steps_since_fit += len(values)
            if s.arima is not None:
                self._guarded(s.arima.update, values)
            if self._pending:
                self._pending_updates.extend(new)
        self._maybe_fit()

    def predict(self, now_s: float, horizon_s: float | None = None) -> Forecast:
        """Workload from the first bucket not yet observed until at least `now_s + horizon`."""
        horizon = self._config.horizon_s if horizon_s is None else horizon_s
        self._collect()
        s = self._learned
        next_index = s.buckets.next_index
        start = math.floor(now_s / self._res + EPS) if next_index is None else next_index
        n_steps = max(1, math.ceil((now_s + horizon - start * self._res) / self._res - EPS))
        level = self._config.interval_level
        arima = s.arima
        predicted = self._guarded(arima.predict_interval, n_steps, level) if arima is not None else None
        arima_values = None if predicted is None else predicted[0]
        # The linear forecast is computed every tick (a line through a few dozen points): its errors give its interval.
        self._linear.fit(s.history)
        linear_values, _ = self._linear.predict_interval(n_steps, None)
        s.linear_errors.remember(start, linear_values)
        if arima_values is not None:
            s.arima_errors.remember(start, arima_values)
        upper: np.ndarray | None
        if predicted is not None and arima is not None and not s.last_poor:
            values, upper = predicted
            # Our own recent errors, once there are enough, rather than the model's interval: pmdarima's bound is
            # one error size at every load level (on the Traffic trace it stayed near 30,000/s at a load of 2,600/s,
            # and the planner kept 3 executors where 1 carried the load).
            margin = s.arima_errors.margin(len(values))
            if margin is not None:
                upper = values + margin
            period = arima.detected_period_steps
            model = f"arima+season{period * self._res:g}s" if period else "arima"
        else:
            margin = s.linear_errors.margin(len(linear_values))
            values, upper, model = linear_values, None if margin is None else linear_values + margin, "linear"
        s.scored_forecast = (start, arima_values, True) if arima_values is not None else (start, values, False)
        return Forecast(
            start_s=start * self._res,
            step_s=self._res,
            values_per_s=tuple(float(v) for v in values),
            model=model,
            upper_per_s=() if upper is None else tuple(float(v) for v in upper),
        )

    # --- the fallback and refit policy -----------------------------------------------------------------------

    def _score(self, first: int, actual: np.ndarray) -> None:
        """Judge the previous forecast once, on the first buckets it covers."""
        s = self._learned
        if s.scored_forecast is None:
            return
        start, predicted, is_arima = s.scored_forecast
        lo, hi = max(first, start), min(first + len(actual), start + len(predicted))
        if lo >= hi:
            return
        s.scored_forecast = None
        s.last_wape = wape(actual[lo - first : hi - first], predicted[lo - start : hi - start])
        if not is_arima:
            return  # the linear forecast before ARIMA exists is scored for reporting only
        poor = s.last_wape > self._config.wape_threshold_ratio
        s.poor_streak = s.poor_streak + 1 if poor else 0
        # Fall back only when the line forecast the same buckets better: a poor ARIMA is not enough, since the
        # line's 15-min extrapolation is often worse still (traffic, first 3 h: p90 WAPE 81 % vs 75 % without).
        linear = s.linear_errors.forecast_from(start)
        linear_wape = math.inf
        if linear is not None and lo - start < len(linear):
            end = min(hi - start, len(linear))
            linear_wape = wape(actual[lo - first : start + end - first], linear[lo - start : end])
        s.last_poor = poor and linear_wape < s.last_wape

    def _maybe_fit(self) -> None:
        s = self._learned
        if self._pending:
            return
        if s.arima is None and len(s.history) >= self._min_steps:
            self._request(refit=False)
        elif s.arima is not None and (
            s.poor_streak >= self._config.poor_forecasts_before_refit
            or 0 < self._refit_every_steps <= s.steps_since_fit
        ):
            self._request(refit=True)

    def _request(self, *, refit: bool) -> None:
        self._learned.steps_since_fit = 0
        job = FitJob(
            self._learned.history[-self._window_steps :].copy(),  # a private copy: the job may run elsewhere
            window_steps=self._window_steps,
            seasonal_period_steps=self._season_steps,
            detect_season=self._config.seasonality,
            select_horizon_steps=self._select_steps,
        )
        self._refits.request(job)
        self._pending, self._pending_updates, self._pending_is_refit = True, [], refit
        self._collect()  # an inline fit is done already

    def _collect(self) -> None:
        """Swap in a requested model once its fit is done; never wait for it."""
        if not self._pending:
            return
        done = self._refits.collect()
        if done is None:
            return
        self._pending = False
        updates, self._pending_updates = np.asarray(self._pending_updates, dtype=float), []
        if isinstance(done, FitFailed):
            self._learned.refit_failures += 1
            return
        try:
            done.update(updates)  # the buckets that arrived while it was fitting
        except Exception:  # noqa: BLE001 - a model that cannot take them keeps the old one; the streak asks again
            self._learned.refit_failures += 1
            return
        self._install(done, refit=self._pending_is_refit)

    def _guarded(self, operation: Callable[..., Any], *args: Any) -> Any:
        """Run an ARIMA operation; a numerical failure drops the model (linear fallback, then a fresh fit)."""
        try:
            return operation(*args)
        except NUMERIC_FAILURES:
            self._learned.arima = None
            self._learned.refit_failures += 1
            return None

    def _install(self, model: ArimaModel, *, refit: bool) -> None:
        s = self._learned
        s.arima = model
        s.refits += int(refit)
        s.poor_streak = 0
        s.last_poor = False
        s.scored_forecast = None  # a forecast of the replaced model says nothing about the new one

    # --- persistence -----------------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """Everything learned as JSON data (no code); a fit still running is dropped (and requested again later)."""
        return encode(self._learned)

    @classmethod
    def from_bytes(
        cls, data: bytes, config: ForecastConfig, *, refits: RefitScheduler | None = None
    ) -> WorkloadForecaster:
        """Restore from `to_bytes`; the input is untrusted: anything malformed raises `ValueError` naming it.

        Thresholds come from `config`. An ARIMA that cannot be rebuilt is dropped with a warning and refitted from
        the restored history; the rest of the forecaster is kept.
        """
        forecaster = cls(config, refits=refits)
        decode(
            data,
            forecaster._learned,
            keep_steps=forecaster._keep_steps,
            window_steps=forecaster._window_steps,
            season_steps=forecaster._season_steps,
        )
        return forecaster
