"""Analyze: the auto-ARIMA search a refit runs — seasonality detection, the fit, and the job handed to a scheduler."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from statsmodels.tsa.stattools import acf

from daedalus_spark.analyze.forecast.models import ArimaModel

# Seasonality detection (`detect_period`): a period counts when the history holds this many cycles of it...
_MIN_CYCLES = 3
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


def fit_arima(
    y: np.ndarray,
    *,
    window_steps: int,
    seasonal_period_steps: int,
    detect_season: bool = False,
    select_horizon_steps: int = 0,
) -> ArimaModel:
    """A freshly searched auto-ARIMA on `y`; run by a `FitJob` wherever its scheduler puts it.

    With `select_horizon_steps`, each search keeps the candidate with the lowest hold-out WAPE over that many steps
    (`holdout_wape`) instead of the lowest AIC. With `detect_season` (and no fixed seasonal period), a period found
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
    if seasonal.aic() + 2 * period < model.aic():
        return seasonal
    return model


def fitted_arima_state(fit: Callable[[], ArimaModel]) -> dict[str, Any] | None:
    """`fit()`'s model as data: what a background refit returns, so that it may run in another process."""
    return fit().to_json()


@dataclass(frozen=True)
class FitJob:
    """One requested fit: the window to search on and the search's settings. Data only, so that it may cross to
    another process; calling it runs the fit (`fit_arima`)."""

    y: np.ndarray
    window_steps: int
    seasonal_period_steps: int
    detect_season: bool = False
    select_horizon_steps: int = 0

    def __call__(self) -> ArimaModel:
        return fit_arima(
            self.y,
            window_steps=self.window_steps,
            seasonal_period_steps=self.seasonal_period_steps,
            detect_season=self.detect_season,
            select_horizon_steps=self.select_horizon_steps,
        )
