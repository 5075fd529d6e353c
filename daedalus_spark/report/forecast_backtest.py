"""Report: rolling-origin backtest of the workload forecaster on a recorded trace, as the controller would run it."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from daedalus_spark.analyze.forecast import WorkloadForecaster, wape
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

    @property
    def refit_seconds_max(self) -> float:
        return max(self.refit_seconds, default=0.0)


def _bucket_means(trace: np.ndarray, resolution_s: float) -> np.ndarray:
    """Actual workload per forecast step: the per-second trace averaged over each `resolution_s` bucket."""
    res = int(round(resolution_s))
    usable = len(trace) // res * res
    return trace[:usable].reshape(-1, res).mean(axis=1)


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


def evaluate_trace(
    trace: np.ndarray, config: ForecastConfig, *, loop_interval_s: float = 60, horizon_s: float | None = None
) -> BacktestResult:
    """Feed `trace` (records/s, one per second) a loop interval at a time: observe, then predict; score each forecast
    with WAPE over its full horizon once the trace covers it. Requires a whole-second `resolution_s`."""
    if config.resolution_s != round(config.resolution_s):
        raise ValueError("the backtest needs a whole-second resolution_s")
    horizon = config.horizon_s if horizon_s is None else horizon_s
    step = max(1, int(round(loop_interval_s)))
    actual = _bucket_means(np.asarray(trace, dtype=float), config.resolution_s)
    forecaster = WorkloadForecaster(config)
    wapes: list[float] = []
    tick_s: list[float] = []
    refit_s: list[float] = []
    fit_s = math.nan
    fallbacks = ticks = 0
    for end in range(step, len(trace) + 1, step):
        fitted_before, refits_before = forecaster.arima_order is not None, forecaster.refits
        started = time.perf_counter()
        forecaster.observe(trace[end - step:end], step_s=1.0, end_s=float(end))
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
        first = int(round(forecast.start_s / forecast.step_s))
        n = math.ceil(horizon / forecast.step_s)
        if first + n <= len(actual):
            wapes.append(wape(actual[first:first + n], forecast.values_per_s[:n]))
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
    )


def format_text(result: BacktestResult, trace_name: str) -> str:
    """A few lines for people."""
    refits = result.refit_seconds
    refit_line = f"{len(refits)} refits, longest {result.refit_seconds_max:.2f} s" if refits else "no refits"
    return "\n".join([
        f"forecast backtest: {trace_name}",
        f"  ticks {result.ticks}, forecasts scored {result.scored_forecasts} over {result.horizon_s:.0f} s",
        f"  WAPE median {result.wape_median:.2%}, p90 {result.wape_p90:.2%}",
        f"  linear fallback used for {result.fallback_share:.1%} of forecasts",
        f"  initial fit {result.fit_seconds:.2f} s; {refit_line}",
        f"  observe+predict per tick: p95 {result.update_seconds_p95 * 1000:.0f} ms, "
        f"max {result.update_seconds_max * 1000:.0f} ms",
    ])
