"""Report: rolling-origin backtest of the workload forecaster on a recorded trace, as the controller would run it."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pmdarima as pm

from daedalus_spark.analyze.forecast import NO_PARAMETER_COVARIANCE, WorkloadForecaster, single_threaded_blas, wape
from daedalus_spark.config import ForecastConfig


@dataclass(frozen=True)
class BacktestResult:
    """Accuracy and cost of the forecaster over one trace (synchronous refits, as in the simulator)."""

    ticks: int
    scored_forecasts: int  # forecasts whose whole horizon lies inside the trace
    horizon_s: float
    wape_median: float
    wape_p90: float
    fallback_share: float  # forecasts that came from the linear fallback
    fit_seconds: float  # the initial auto-ARIMA fit
    refit_seconds: tuple[float, ...]  # each refit after a poor streak
    update_seconds_p95: float  # observe + predict per tick, ticks with a (re)fit excluded
    update_seconds_max: float
    wapes: tuple[float, ...] = ()  # every scored forecast's WAPE, in tick order
    # Share of actual buckets at or below the forecast's upper bound, over forecasts that had one (nan: none had).
    interval_coverage: float = math.nan
    interval_share: float = math.nan  # share of scored forecasts that carried an upper bound

    @property
    def refit_seconds_max(self) -> float:
        return max(self.refit_seconds, default=0.0)


def _bucket_means(trace: np.ndarray, resolution_s: float) -> np.ndarray:
    """Actual workload per forecast step: the per-second trace averaged over each `resolution_s` bucket."""
    res = round(resolution_s)
    usable = len(trace) // res * res
    return np.asarray(trace[:usable].reshape(-1, res).mean(axis=1), dtype=float)


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


def evaluate_trace(
    trace: np.ndarray,
    config: ForecastConfig,
    *,
    loop_interval_s: float = 60,
    horizon_s: float | None = None,
    score_from_s: float = 0.0,
) -> BacktestResult:
    """Feed `trace` (records/s, one per second) a loop interval at a time: observe, then predict; score each forecast
    made at or after `score_from_s` with WAPE over its full horizon once the trace covers it. Requires a
    whole-second `resolution_s`."""
    if config.resolution_s != round(config.resolution_s):
        raise ValueError("the backtest needs a whole-second resolution_s")
    horizon = config.horizon_s if horizon_s is None else horizon_s
    step = max(1, round(loop_interval_s))
    actual = _bucket_means(np.asarray(trace, dtype=float), config.resolution_s)
    forecaster = WorkloadForecaster(config)
    wapes: list[float] = []
    tick_s: list[float] = []
    refit_s: list[float] = []
    fit_s = math.nan
    fallbacks = ticks = 0
    covered = bounded = with_upper = 0
    for end in range(step, len(trace) + 1, step):
        fitted_before, refits_before = forecaster.arima_order is not None, forecaster.refits
        started = time.perf_counter()
        forecaster.observe(trace[end - step : end].tolist(), step_s=1.0, end_s=float(end))
        forecast = forecaster.predict(float(end), horizon)
        elapsed = time.perf_counter() - started
        ticks += 1
        fallbacks += forecast.model == "linear"
        if not fitted_before and forecaster.arima_order is not None:
            fit_s = elapsed
        elif forecaster.refits > refits_before:
            refit_s.append(elapsed)
        else:
            tick_s.append(elapsed)  # (re)fit ticks are reported on their own: the real loop runs them off-tick
        first = round(forecast.start_s / forecast.step_s)
        n = math.ceil(horizon / forecast.step_s)
        if first + n <= len(actual) and end >= score_from_s:
            wapes.append(wape(actual[first : first + n], forecast.values_per_s[:n]))
            if len(forecast.upper_per_s) >= n:
                with_upper += 1
                covered += int(np.sum(actual[first : first + n] <= np.asarray(forecast.upper_per_s[:n])))
                bounded += n
    return BacktestResult(
        ticks=ticks,
        scored_forecasts=len(wapes),
        horizon_s=horizon,
        wape_median=_percentile(wapes, 50),
        wape_p90=_percentile(wapes, 90),
        fallback_share=fallbacks / ticks if ticks else math.nan,
        fit_seconds=fit_s,
        refit_seconds=tuple(refit_s),
        update_seconds_p95=_percentile(tick_s, 95),
        update_seconds_max=max(tick_s, default=math.nan),
        wapes=tuple(wapes),
        interval_coverage=covered / bounded if bounded else math.nan,
        interval_share=with_upper / len(wapes) if wapes else math.nan,
    )


def baseline_wapes(
    trace: np.ndarray,
    *,
    resolution_s: int = 10,
    window_s: float = 3600,
    refit_interval_s: float = 900,
    first_fit_s: float = 600,
    loop_interval_s: float = 60,
    horizon_s: float = 900,
) -> list[float]:
    """The forecaster's yardstick: plain pmdarima auto-ARIMA searched afresh on the latest `window_s` every
    `refit_interval_s` (first at `first_fit_s`), pmdarima's `update` with each tick's buckets in between; WAPE of
    each forecast over its full horizon, scored like `evaluate_trace`. A numerical failure refits at once."""
    actual = _bucket_means(np.asarray(trace, dtype=float), resolution_s)
    window, tick = round(window_s / resolution_s), max(1, round(loop_interval_s / resolution_s))
    every, first_fit = round(refit_interval_s / resolution_s), round(first_fit_s / resolution_s)
    n = math.ceil(horizon_s / resolution_s)
    wapes: list[float] = []
    model: pm.ARIMA | None = None
    fitted_at = 0
    with single_threaded_blas():
        for end in range(tick, len(actual) + 1, tick):
            if end < first_fit:
                continue
            if model is not None and end - fitted_at < every:
                try:
                    model.update(actual[end - tick : end], **NO_PARAMETER_COVARIANCE)
                except (np.linalg.LinAlgError, ValueError):
                    model = None
            if model is None or end - fitted_at >= every:
                model = _auto_arima(actual[max(0, end - window) : end])
                fitted_at = end
            predicted = np.clip(np.nan_to_num(model.predict(n_periods=n), nan=actual[end - 1]), 0.0, None)
            if end + n <= len(actual):
                wapes.append(wape(actual[end : end + n], predicted))
    return wapes


def _auto_arima(y: npt.NDArray[np.float64]) -> pm.ARIMA:
    # The same search space as the forecaster's, so the comparison is about how the model is kept, not which.
    return pm.auto_arima(
        y,
        max_p=3,
        max_q=3,
        max_d=2,
        stepwise=True,
        suppress_warnings=True,
        error_action="ignore",
        **NO_PARAMETER_COVARIANCE,
    )


def format_text(result: BacktestResult, trace_name: str) -> str:
    """A few lines for people."""
    refits = result.refit_seconds
    refit_line = f"{len(refits)} refits, longest {result.refit_seconds_max:.2f} s" if refits else "no refits"
    return "\n".join(
        [
            f"forecast backtest: {trace_name}",
            f"  ticks {result.ticks}, forecasts scored {result.scored_forecasts} over {result.horizon_s:.0f} s",
            f"  WAPE median {result.wape_median:.2%}, p90 {result.wape_p90:.2%}",
            f"  linear fallback used for {result.fallback_share:.1%} of forecasts",
            f"  initial fit {result.fit_seconds:.2f} s; {refit_line}",
            f"  observe+predict per tick: p95 {result.update_seconds_p95 * 1000:.0f} ms, "
            f"max {result.update_seconds_max * 1000:.0f} ms",
        ]
    )
