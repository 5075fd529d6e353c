"""Unit tests of the forecaster's uncertainty, seasonality, periodic refits and stored version."""

from __future__ import annotations

import json
import math

import numpy as np
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.tsa.statespace.sarimax import SARIMAX

from daedalus_spark.analyze.forecast import (
    ArimaModel,
    HorizonErrors,
    WorkloadForecaster,
    detect_period,
    fit_arima,
    holdout_wape,
)
from daedalus_spark.config import ForecastConfig
from daedalus_spark.untrusted import Damaged

# Small windows keep auto-ARIMA fits well under a second.
CONFIG = ForecastConfig(
    resolution_s=10,
    history_window_s=600,
    min_history_s=120,
    linear_window_s=60,
    horizon_s=120,
    refit_interval_s=0,
)


def _sine(n: int, period: int, *, noise: float, seed: int = 0, level: float = 1000.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    return level + 300 * np.sin(2 * np.pi * t / period) + rng.normal(0, noise, n)


def _feed(forecaster: WorkloadForecaster, per_second: np.ndarray, *, tick_s: int = 60) -> None:
    for end in range(tick_s, len(per_second) + 1, tick_s):
        forecaster.observe(per_second[end - tick_s : end], step_s=1, end_s=end)
        forecaster.predict(end)


# --- seasonality detection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "noise"),
    [(12, 30.0), (24, 100.0), (48, 150.0), (90, 60.0)],
    ids=["12-low-noise", "24-snr-3", "48-snr-2", "90-three-cycles-fit"],
)
def test_detects_the_period_of_a_noisy_sine(period: int, noise: float) -> None:
    assert abs(detect_period(_sine(360, period, noise=noise)) - period) <= 1


@pytest.mark.parametrize(
    "series",
    [
        np.random.default_rng(1).normal(1000, 50, 360),
        np.random.default_rng(2).normal(1000, 50, 360),
        np.full(360, 1000.0),
        np.linspace(100, 5000, 360),
        _sine(360, 200, noise=10),  # fewer than three cycles in the history
        _sine(8, 3, noise=1),  # too short for any lag
    ],
    ids=["white-noise-1", "white-noise-2", "constant", "ramp", "under-three-cycles", "too-short"],
)
def test_finds_no_period_where_there_is_none(series: np.ndarray) -> None:
    assert detect_period(series) == 0


def test_the_detected_period_is_an_acf_peak_the_oracle_agrees_with() -> None:
    """Oracle: the detected lag is a local maximum of numpy's own autocorrelation of the detrended series."""
    y = _sine(360, 30, noise=80, seed=5)
    lag = detect_period(y)
    t = np.arange(len(y), dtype=float)
    x = y - np.polyval(np.polyfit(t, y, 1), t)
    x = x - x.mean()
    r = np.correlate(x, x, mode="full")[len(x) - 1 :] / np.dot(x, x)
    assert r[lag] >= r[lag - 1] and r[lag] >= r[lag + 1] and r[lag] > 0.3


def test_a_seasonal_model_is_fitted_and_named_with_its_period() -> None:
    config = CONFIG.model_copy(update={"history_window_s": 1800, "min_history_s": 1800, "horizon_s": 300})
    forecaster = WorkloadForecaster(config)
    per_second = np.repeat(_sine(180, 18, noise=20), 10)  # a 180-s cycle in 10-s buckets
    _feed(forecaster, per_second)
    forecast = forecaster.predict(1800)
    assert forecaster.detected_period_s == pytest.approx(180, abs=10)
    assert forecast.model.startswith("arima+season") and forecast.model.endswith("s")
    assert forecast.model == f"arima+season{forecaster.detected_period_s:g}s"


def test_seasonality_off_fits_the_plain_model() -> None:
    config = CONFIG.model_copy(
        update={"history_window_s": 1800, "min_history_s": 1800, "horizon_s": 300, "seasonality": False}
    )
    forecaster = WorkloadForecaster(config)
    _feed(forecaster, np.repeat(_sine(180, 18, noise=20), 10))
    assert forecaster.detected_period_s == 0 and forecaster.predict(1800).model == "arima"


def test_the_profile_is_added_back_to_the_residual_forecast() -> None:
    """Oracle: a deseasonalized model forecasts its ARIMA's residual forecast plus the profile at the right phase."""
    y = _sine(200, 20, noise=5, seed=3)
    model = ArimaModel(window_steps=200)
    model.deseasonalize(y, 20)
    model.fit(y)
    cycles = y.reshape(-1, 20)
    np.testing.assert_allclose(model._profile, cycles.mean(axis=0) - cycles.mean())
    residual_forecast = np.asarray(model._model.predict(n_periods=25)) * model._scale
    phases = (200 + np.arange(25)) % 20
    np.testing.assert_allclose(model.predict(25), np.clip(residual_forecast + model._profile[phases], 0, None))


# --- prediction intervals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.6, 0.9, 0.99], ids=["60pct", "90pct", "99pct"])
def test_arima_upper_bound_is_the_statsmodels_one_sided_quantile(level: float) -> None:
    """Oracle: the upper bound equals statsmodels' interval at alpha = 2 (1 - level) for the same parameters."""
    y = _sine(120, 40, noise=20, seed=2)
    model = fit_arima(y, window_steps=120, seasonal_period_steps=0)
    values, upper = model.predict_interval(12, level)
    fitted = model._model
    # The model is fitted on the series in its own units (y / scale): the interval is scaled back.
    scaled = y / model._scale
    res = SARIMAX(scaled, order=fitted.order, trend="c" if fitted.with_intercept else None).filter(fitted.params())
    expected = res.get_forecast(12).conf_int(alpha=2 * (1 - level))[:, 1] * model._scale
    assert upper is not None
    np.testing.assert_allclose(upper, np.maximum(expected, values), rtol=1e-6)


def test_horizon_error_margin_is_the_numpy_quantile_of_matured_errors_plus_the_tracked_offset() -> None:
    """Oracle: the margin at each step is numpy's quantile of (actual - forecast) over the matured forecasts, plus
    that step's tracked offset times their mean absolute value."""
    errors = HorizonErrors("t", horizon_steps=3, level=0.8)
    rng = np.random.default_rng(0)
    actual = 100 + rng.normal(0, 10, 40)
    made = []
    for start in range(30):
        forecast = np.full(3, 100.0) + start % 3
        errors.remember(start, forecast)
        made.append((start, forecast))
        errors.observe(start, actual[start : start + 1])
    errors.observe(30, actual[30:33])
    offsets = errors.offsets.copy()
    assert np.any(offsets != 0)  # the bounds given so far moved them
    matured = [[actual[s + k] - f[k] for s, f in made if s + k <= 32] for k in range(3)]
    expected = [
        max(0.0, float(np.quantile(e, 0.8)) + offsets[k] * float(np.mean(np.abs(e)))) for k, e in enumerate(matured)
    ]
    margin = errors.margin(3)
    assert margin is not None
    np.testing.assert_allclose(margin, expected)


@pytest.mark.parametrize(
    ("actual", "offset_after", "margin_after"),
    [
        # a miss moves it up by gain 2 x 0.9, in error sizes: the six errors (five of 1, one of 50) have a 0.9
        # quantile of 25.5 and a mean size of 55 / 6
        pytest.param(50.0, 2.0 * 0.9, 25.5 + 1.8 * 55 / 6, id="a-miss-widens-by-gain-x-0.9-error-sizes"),
        # ... a cover down by 2 x 0.1: six errors of 1, quantile 1 and size 1
        pytest.param(1.0, -2.0 * 0.1, 1.0 - 0.2, id="a-cover-narrows-by-gain-x-0.1-error-sizes"),
    ],
)
def test_each_matured_bound_moves_its_steps_offset(actual: float, offset_after: float, margin_after: float) -> None:
    errors = HorizonErrors("t", horizon_steps=1, level=0.9)
    for start in range(5):  # five errors of 1: margin 1 from then on
        errors.remember(start, np.array([0.0]))
        errors.observe(start, np.array([1.0]))
    np.testing.assert_allclose(errors.offsets, 0.0)  # no bound was given yet, so nothing moved
    errors.remember(5, np.array([0.0]))  # its bound: 0 + margin 1
    errors.observe(5, np.array([actual]))
    np.testing.assert_allclose(errors.offsets, [offset_after])
    np.testing.assert_allclose(errors.margin(1), [margin_after])


def test_the_offset_shrinks_with_the_errors_once_a_burst_has_left_the_window() -> None:
    """Errors of 1, a burst of ten errors of 1,000 that the bounds miss, then errors of 1 again: once the burst has
    left the 30 errors kept, the margin is back to the size of the errors, not the burst's (an offset in records/s
    that the burst raised stayed up for hours on the suite's flash crowds)."""
    errors = HorizonErrors("t", horizon_steps=1, level=0.9)
    sizes = [1.0] * 10 + [1000.0] * 10 + [1.0] * 60
    for start, size in enumerate(sizes):
        errors.remember(start, np.array([0.0]))
        errors.observe(start, np.array([size]))
    assert errors.offsets[0] > 0  # the misses still count
    margin = errors.margin(1)
    assert margin is not None and margin[0] < 10.0


@pytest.mark.parametrize("growth", [pytest.param(2.0, id="spread-triples"), pytest.param(0.0, id="steady")])
def test_tracked_bounds_cover_the_level_asked(growth: float) -> None:
    """Errors whose spread triples over the run (a quantile of the last 30 trails them) or stays: the share of
    actuals at or below the bound stays within 3 points of 90 %."""
    rng = np.random.default_rng(4)
    errors = HorizonErrors("t", horizon_steps=1, level=0.9)
    covered = []
    n = 3000
    for t in range(n):
        errors.remember(t, np.array([0.0]))
        margin = errors.margin(1)
        actual = rng.normal(0.0, 1.0 + growth * t / n)
        if margin is not None:
            covered.append(actual <= margin[0])
        errors.observe(t, np.array([actual]))
    assert abs(float(np.mean(covered)) - 0.9) <= 0.03


def test_no_margin_until_every_step_has_enough_errors() -> None:
    errors = HorizonErrors("t", horizon_steps=10, level=0.9)
    for start in range(4):
        errors.remember(start, np.full(10, 1.0))
        errors.observe(start, np.array([2.0]))
    assert errors.margin(1) is None  # 4 matured errors at step 0: fewer than 5
    errors.remember(4, np.full(10, 1.0))
    errors.observe(4, np.array([2.0]))
    assert errors.margin(1) is not None and errors.margin(10) is None


def test_holdout_wape_of_a_perfect_model_is_zero() -> None:
    class Perfect:
        class arima_res_:  # noqa: N801 - mimics the pmdarima attribute
            @staticmethod
            def get_prediction(start: int, end: int, dynamic: bool) -> object:
                return type("P", (), {"predicted_mean": y[start : end + 1]})()

    y = np.linspace(10, 20, 60)
    assert holdout_wape(Perfect(), y, y, 10) == 0.0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    level=st.floats(min_value=100, max_value=1e6),
    amplitude=st.floats(min_value=0, max_value=0.9),
    noise=st.floats(min_value=0, max_value=0.3),
    seed=st.integers(min_value=0, max_value=2**16),
    interval=st.sampled_from([0.55, 0.9, 0.99]),
)
def test_upper_bound_is_finite_non_negative_and_never_below_the_point(
    level: float, amplitude: float, noise: float, seed: int, interval: float
) -> None:
    rng = np.random.default_rng(seed)
    t = np.arange(900, dtype=float)
    per_second = level * (1 + amplitude * np.sin(t / 120) + noise * rng.standard_normal(900))
    per_second = np.clip(per_second, 0, None)
    forecaster = WorkloadForecaster(CONFIG.model_copy(update={"interval_level": interval}))
    for end in range(60, 901, 60):
        forecaster.observe(per_second[end - 60 : end], step_s=1, end_s=end)
        forecast = forecaster.predict(end)
        assert all(math.isfinite(v) and v >= 0 for v in forecast.values_per_s)
        if forecast.upper_per_s:
            assert len(forecast.upper_per_s) == len(forecast.values_per_s)
            assert all(math.isfinite(u) for u in forecast.upper_per_s)
            assert all(u >= v >= 0 for u, v in zip(forecast.upper_per_s, forecast.values_per_s, strict=True))
    assert forecaster.arima_order is not None and forecast.upper_per_s  # ARIMA gives one from its first forecast


def test_linear_fallback_gets_an_interval_once_its_errors_have_matured() -> None:
    config = CONFIG.model_copy(update={"min_history_s": 3600, "history_window_s": 3600})  # no ARIMA within the test
    forecaster = WorkloadForecaster(config)
    per_second = _sine(900, 300, noise=30, seed=4)
    intervals = []
    for end in range(60, 901, 60):
        forecaster.observe(per_second[end - 60 : end], step_s=1, end_s=end)
        forecast = forecaster.predict(end)
        assert forecast.model == "linear"
        intervals.append(bool(forecast.upper_per_s))
    # 13 buckets ahead need 5 forecasts whose 13th bucket was seen: none before the 7th tick, every one after.
    assert not any(intervals[:6]) and all(intervals[-5:])


@pytest.mark.parametrize(
    ("level", "ok"),
    [(0.9, True), (0.51, True), (0.5, False), (1.0, False), (0.0, False)],
    ids=["default", "just-above-median", "median", "one", "zero"],
)
def test_interval_level_bounds(level: float, ok: bool) -> None:
    if ok:
        assert ForecastConfig(interval_level=level).interval_level == level
    else:
        with pytest.raises(pydantic.ValidationError):
            ForecastConfig(interval_level=level)


# --- periodic refits ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("refit_interval_s", "refits"), [(0, 0), (300, 2), (600, 1)], ids=["off", "every-5-min", "every-10-min"]
)
def test_periodic_refits(refit_interval_s: float, refits: int) -> None:
    forecaster = WorkloadForecaster(CONFIG.model_copy(update={"refit_interval_s": refit_interval_s}))
    _feed(forecaster, _sine(720, 200, noise=10))  # ARIMA from 120 s; 600 s of buckets after it
    assert forecaster.refits == refits


# --- stored state ------------------------------------------------------------------------------------------------


def test_round_trip_keeps_the_season_the_interval_errors_and_the_refit_clock() -> None:
    config = CONFIG.model_copy(
        update={"history_window_s": 1800, "min_history_s": 1800, "horizon_s": 300, "refit_interval_s": 3600}
    )
    original = WorkloadForecaster(config)
    per_second = np.repeat(_sine(240, 18, noise=20, seed=6), 10)
    _feed(original, per_second[:2400])
    restored = WorkloadForecaster.from_bytes(original.to_bytes(), config)
    assert restored.detected_period_s == original.detected_period_s > 0
    np.testing.assert_array_equal(restored._learned.arima_errors.errors, original._learned.arima_errors.errors)
    np.testing.assert_array_equal(restored._learned.linear_errors.errors, original._learned.linear_errors.errors)
    assert restored._learned.steps_since_fit == original._learned.steps_since_fit
    a, b = original.predict(2400), restored.predict(2400)
    assert a.model == b.model and a.upper_per_s
    np.testing.assert_allclose(b.values_per_s, a.values_per_s, rtol=1e-9)
    np.testing.assert_allclose(b.upper_per_s, a.upper_per_s, rtol=1e-9)


@pytest.mark.parametrize("version", [1, 3, "2", None], ids=["older", "newer", "string", "null"])
def test_an_unknown_version_is_refused_naming_the_component_and_the_version(version: object) -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _sine(240, 30, noise=5))
    state = json.loads(forecaster.to_bytes())
    state["version"] = version
    with pytest.raises(Damaged, match=r"forecaster: unknown stored version .*" + repr(version)[:3]):
        WorkloadForecaster.from_bytes(json.dumps(state).encode(), CONFIG)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("arima_errors", {"errors": [], "open": [], "next_row": 0}),
        ("linear_errors", {"errors": [[None] * 3] * 30, "open": [], "next_row": 0}),
        ("linear_errors", None),
        ("steps_since_fit", -1),
    ],
    ids=["no-error-rows", "another-horizon", "missing-errors", "negative-refit-clock"],
)
def test_damaged_new_fields_are_refused(key: str, value: object) -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _sine(240, 30, noise=5))
    state = json.loads(forecaster.to_bytes())
    state[key] = value
    with pytest.raises(ValueError, match="forecaster"):
        WorkloadForecaster.from_bytes(json.dumps(state).encode(), CONFIG)


def test_arima_upper_bound_is_its_own_recent_errors_once_they_have_matured() -> None:
    """pmdarima's interval is one error size at every load level; once every step ahead has enough matured errors,
    the bound is the point forecast plus their quantile and each step's tracked offset instead (numpy oracle),
    whatever the model's interval says."""
    forecaster = WorkloadForecaster(CONFIG)
    per_second = _sine(1800, 300, noise=30, seed=5)
    for end in range(60, 1801, 60):
        forecaster.observe(per_second[end - 60 : end], step_s=1, end_s=end)
        errors = forecaster._learned.arima_errors.errors.copy()  # what the next forecast's margin is made of
        offsets = forecaster._learned.arima_errors.offsets.copy()  # plus the offsets its bounds so far tracked
        forecast = forecaster.predict(end)
    assert forecast.model.startswith("arima") and forecast.upper_per_s
    n = len(forecast.values_per_s)
    steps = np.minimum(np.arange(n), errors.shape[1] - 1)
    assert np.isfinite(errors[:, steps]).sum(axis=0).min() >= 5  # matured: the margin is in use
    # remember() clears the row the new forecast takes before the margin is read
    errors[(forecaster._learned.arima_errors.next_row - 1) % errors.shape[0], :] = np.nan
    quantiles = np.nanquantile(errors[:, : int(steps[-1]) + 1], CONFIG.interval_level, axis=0)
    sizes = np.nanmean(np.abs(errors[:, : int(steps[-1]) + 1]), axis=0)
    expected = np.maximum(quantiles[steps] + offsets[steps] * sizes[steps], 0)
    np.testing.assert_allclose(np.subtract(forecast.upper_per_s, forecast.values_per_s), expected, rtol=1e-9)


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        pytest.param([1.0], "offset_scales: expected", id="another-horizon"),
        pytest.param("x", "offset_scales: expected a list", id="not-a-list"),
        pytest.param(None, "offset_scales: expected a list", id="null"),
    ],
)
def test_damaged_tracked_offsets_are_refused(offsets: object, message: str) -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _sine(240, 30, noise=5))
    state = json.loads(forecaster.to_bytes())
    state["arima_errors"]["offset_scales"] = offsets
    with pytest.raises(ValueError, match=message):
        WorkloadForecaster.from_bytes(json.dumps(state).encode(), CONFIG)


def test_a_store_from_before_the_tracking_restores_with_no_offsets() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _sine(600, 30, noise=5))
    state = json.loads(forecaster.to_bytes())
    del state["arima_errors"]["offset_scales"]
    state["arima_errors"]["open"] = [row[:3] for row in state["arima_errors"]["open"]]
    restored = WorkloadForecaster.from_bytes(json.dumps(state).encode(), CONFIG)
    np.testing.assert_array_equal(restored._learned.arima_errors.offsets, 0.0)
    assert all(issued is None for *_, issued in restored._learned.arima_errors.open)


def test_a_store_with_offsets_in_records_restores_them_in_error_sizes() -> None:
    """Offsets stored in records/s (before they counted in error sizes) are divided by each step's mean error size:
    the margins the restored forecaster gives are those it gave."""
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _sine(1800, 300, noise=30, seed=5))
    learned = forecaster._learned.arima_errors
    n = learned.horizon_steps - 1  # the steps a forecast of the horizon has matured errors at
    margin = learned.margin(n)
    assert margin is not None and np.any(learned.offsets != 0)
    state = json.loads(forecaster.to_bytes())
    sizes = np.append(np.nanmean(np.abs(learned.errors[:, :n]), axis=0), 0.0)  # 0 at the step never matured
    state["arima_errors"]["offsets"] = list(np.asarray(state["arima_errors"].pop("offset_scales")) * sizes)
    restored = WorkloadForecaster.from_bytes(json.dumps(state).encode(), CONFIG)._learned.arima_errors
    np.testing.assert_allclose(restored.margin(n), margin, rtol=1e-9)
