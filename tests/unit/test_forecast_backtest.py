"""Unit tests of the forecast backtest's yardstick (plain auto-ARIMA) and its interval coverage figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from daedalus_spark.config import ForecastConfig
from daedalus_spark.report.forecast_backtest import baseline_wapes, evaluate_trace

CONFIG = ForecastConfig(resolution_s=10, history_window_s=600, min_history_s=300, linear_window_s=60, horizon_s=120)


def _trace(seconds: int = 1800) -> np.ndarray:
    rng = np.random.default_rng(0)
    t = np.arange(seconds, dtype=float)
    return 1000 + 200 * np.sin(t / 200) + rng.normal(0, 10, seconds)


def test_baseline_scores_every_tick_whose_horizon_the_trace_covers() -> None:
    wapes = baseline_wapes(_trace(), window_s=600, refit_interval_s=300, first_fit_s=300, horizon_s=120)
    # ticks at 300, 360, ..., 1680 s have their 120-s horizon inside 1,800 s
    assert len(wapes) == len(range(300, 1681, 60))
    assert all(math.isfinite(w) and 0 <= w < 0.2 for w in wapes)


@pytest.mark.parametrize("score_from_s", [0, 600], ids=["all-ticks", "from-600-s"])
def test_backtest_reports_coverage_as_a_share_and_scores_from_the_given_time(score_from_s: float) -> None:
    result = evaluate_trace(_trace(), CONFIG, loop_interval_s=60, horizon_s=120, score_from_s=score_from_s)
    assert len(result.wapes) == result.scored_forecasts == len(range(max(60, score_from_s), 1681, 60))
    assert 0 <= result.interval_coverage <= 1 and 0 < result.interval_share <= 1
