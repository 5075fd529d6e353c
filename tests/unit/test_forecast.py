"""Unit tests of the workload forecaster (§3.3): WAPE, aggregation, fallback, refits, persistence."""

from __future__ import annotations

import json
import math
import multiprocessing
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import ArimaModel, Buckets, LinearModel, WorkloadForecaster, wape, window_means
from daedalus_spark.config import ForecastConfig
from daedalus_spark.runtime.refit_scheduler import PoolRefits

# Small windows keep auto-ARIMA fits well under a second.
CONFIG = ForecastConfig(
    resolution_s=10,
    history_window_s=300,
    min_history_s=120,
    linear_window_s=60,
    horizon_s=120,
    poor_forecasts_before_refit=2,
)


class ManualPool(Executor):
    """Runs a submitted job only when the test says so: background refits without threads or sleeps."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.jobs.append((future, fn, args, kwargs))
        return future

    def run_all(self) -> None:
        jobs, self.jobs = self.jobs, []
        for future, fn, args, kwargs in jobs:
            future.set_result(fn(*args, **kwargs))


def _smooth(seconds: int, seed: int = 0, level: float = 1000.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(seconds, dtype=float)
    return level + 200 * np.sin(t / 300) + rng.normal(0, 5, seconds)


def _feed(forecaster: WorkloadForecaster, trace: np.ndarray, *, start_s: int = 0, tick_s: int = 60) -> None:
    """Observe then predict every tick, as the controller does."""
    for end in range(tick_s, len(trace) + 1, tick_s):
        forecaster.observe(trace[end - tick_s : end], step_s=1, end_s=start_s + end)
        forecaster.predict(start_s + end)


def _jumps(forecaster: WorkloadForecaster, *, start_s: int, ticks: int) -> int:
    """Ticks whose workload jumps between two levels ARIMA cannot foresee; returns the new end time."""
    end = start_s
    for _ in range(ticks):
        end += 60
        level = 5000.0 if (end // 60) % 2 == 0 else 1000.0  # alternates from tick to tick, whatever the start
        forecaster.observe([level] * 60, step_s=1, end_s=end)
        forecaster.predict(end)
    return end


# --- WAPE ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "predicted", "expected"),
    [
        ([100, 100], [90, 110], 0.1),
        ([100, 300], [100, 300], 0.0),
        ([100, 300], [0, 0], 1.0),
        ([200, 0], [100, 100], 1.0),
        ([0, 0], [0, 0], 0.0),
        ([0, 0], [1, 0], math.inf),
        ([], [], 0.0),
    ],
    ids=["ten-percent", "perfect", "all-zero-forecast", "weighted-by-total", "zero-zero", "zero-actual", "empty"],
)
def test_wape_oracle(actual: list[float], predicted: list[float], expected: float) -> None:
    assert wape(actual, predicted) == pytest.approx(expected)


def test_wape_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="shape"):
        wape([1, 2], [1])


# --- aggregation -----------------------------------------------------------------------------------------------


def test_partial_bucket_is_kept_until_complete() -> None:
    buckets = Buckets(10)
    assert buckets.add([1.0] * 15, step_s=1, end_s=15) == [1.0]
    assert buckets.add([3.0] * 5, step_s=1, end_s=20) == [2.0]  # five 1s and five 3s


def test_coarse_samples_are_spread_over_buckets() -> None:
    buckets = Buckets(10)
    # 15-s Prometheus samples: the middle bucket gets half of each.
    assert buckets.add([100.0, 300.0], step_s=15, end_s=30) == [100.0, 200.0, 300.0]


def test_a_monitoring_gap_repeats_the_last_level() -> None:
    buckets = Buckets(10)
    buckets.add([4.0] * 10, step_s=1, end_s=10)
    assert buckets.add([8.0] * 10, step_s=1, end_s=40) == [4.0, 4.0, 8.0]


@pytest.mark.parametrize(
    ("step_s", "end_s"),
    [(1.0, 60.0), (0.5, 30.0), (2.0, 90.0), (10.0, 120.0)],
    ids=["1s-samples", "half-second", "2s-not-from-zero", "one-per-bucket"],
)
def test_window_means_and_the_buckets_agree_on_whole_buckets(step_s: float, end_s: float) -> None:
    """The history's per-window means lie on the forecaster's grid: a bucket the window fills whole has the same
    mean and is stamped with the end of the bucket that `Buckets` emits."""
    values = list(np.random.default_rng(1).uniform(100, 900, round(60 / step_s)))
    buckets = Buckets(10)
    emitted = buckets.add(values, step_s=step_s, end_s=end_s)
    first = buckets.next_index - len(emitted)
    means = window_means(values, step_s=step_s, end_s=end_s, resolution_s=10)
    assert [t for t, _ in means] == [10.0 * (first + k + 1) for k in range(len(emitted))]
    np.testing.assert_allclose([m for _, m in means], emitted, rtol=1e-12)


def test_window_means_keep_the_partial_bucket_the_buckets_hold_back() -> None:
    means = window_means([1.0] * 10 + [3.0] * 5, step_s=1, end_s=15, resolution_s=10)
    assert means == [(10.0, 1.0), (20.0, 3.0)]  # the history sees the partial last bucket at once
    assert Buckets(10).add([1.0] * 10 + [3.0] * 5, step_s=1, end_s=15) == [1.0]


def test_forecaster_counts_only_complete_buckets() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    forecaster.observe([5.0] * 25, step_s=1, end_s=25)
    assert forecaster.history_steps == 2
    forecast = forecaster.predict(25)
    assert forecast.start_s == 20  # the partial bucket is forecast, not yet observed


def test_history_stays_bounded() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _smooth(600))
    assert forecaster.history_steps == 30  # history_window_s / resolution_s


# --- model choice ----------------------------------------------------------------------------------------------


def test_short_history_uses_linear() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    forecaster.observe(list(np.linspace(100, 160, 60)), step_s=1, end_s=60)
    forecast = forecaster.predict(60)
    assert forecast.model == "linear"
    assert forecaster.using_fallback
    assert forecast.step_s == 10
    assert forecast.values_per_s[0] > 150  # the rising slope is projected
    assert forecast.horizon_s >= CONFIG.horizon_s


def test_no_data_forecasts_zero() -> None:
    forecast = WorkloadForecaster(CONFIG).predict(100)
    assert forecast.model == "linear" and set(forecast.values_per_s) == {0.0}


def test_arima_once_history_suffices() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _smooth(180))
    forecast = forecaster.predict(180)
    assert forecast.model == "arima"
    assert forecast.start_s == 180 and len(forecast.values_per_s) == 12
    assert min(forecast.values_per_s) >= 0
    assert forecaster.last_wape is not None and forecaster.last_wape < CONFIG.wape_threshold_ratio


def test_unforeseen_level_shift_counts_as_poor_but_keeps_arima_when_the_line_was_no_better() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _smooth(240))
    assert forecaster.predict(240).model == "arima"
    forecaster.observe([5000.0] * 60, step_s=1, end_s=300)
    assert forecaster.last_wape is not None and forecaster.last_wape > CONFIG.wape_threshold_ratio
    assert forecaster.poor_streak == 1 and not forecaster.using_fallback
    assert forecaster.predict(300).model == "arima"


def test_a_ramp_the_line_foresaw_switches_to_linear_next_tick() -> None:
    config = CONFIG.model_copy(update={"poor_forecasts_before_refit": 100, "wape_threshold_ratio": 0.05})
    forecaster = WorkloadForecaster(config)
    _feed(forecaster, _smooth(240))
    ramp = 1000.0 + 50.0 * np.arange(120)  # +3,000 records/s a minute, steadily
    forecaster.observe(ramp[:60], step_s=1, end_s=300)
    forecaster.predict(300)  # the line through the last minute extends the ramp
    forecaster.observe(ramp[60:], step_s=1, end_s=360)
    assert forecaster.last_wape is not None and forecaster.last_wape > config.wape_threshold_ratio
    assert forecaster.using_fallback and forecaster.predict(360).model == "linear"


def test_good_forecast_ends_the_fallback() -> None:
    forecaster = WorkloadForecaster(CONFIG.model_copy(update={"poor_forecasts_before_refit": 100}))
    _feed(forecaster, _smooth(240))
    forecaster.observe([5000.0] * 60, step_s=1, end_s=300)
    forecaster.predict(300)
    for end in (360, 420, 480):  # the shifted level holds; ARIMA, updated with it, becomes right again
        forecaster.observe([5000.0] * 60, step_s=1, end_s=end)
        forecast = forecaster.predict(end)
    assert forecaster.poor_streak == 0 and forecast.model == "arima"


# --- refits ----------------------------------------------------------------------------------------------------


def test_sync_refit_after_n_poor_forecasts() -> None:
    forecaster = WorkloadForecaster(CONFIG)
    _feed(forecaster, _smooth(180))
    _jumps(forecaster, start_s=180, ticks=1)
    assert forecaster.poor_streak == 1 and forecaster.refits == 0
    _jumps(forecaster, start_s=240, ticks=1)
    assert forecaster.refits == 1 and forecaster.poor_streak == 0
    assert not forecaster.using_fallback


def test_background_fits_never_block_and_swap_when_done() -> None:
    pool = ManualPool()
    forecaster = WorkloadForecaster(CONFIG, refits=PoolRefits(pool))
    _feed(forecaster, _smooth(180))
    assert forecaster.refit_pending and forecaster.predict(180).model == "linear"  # initial fit queued
    pool.run_all()
    assert forecaster.predict(180).model == "arima"
    end = _jumps(forecaster, start_s=180, ticks=2)
    assert forecaster.refit_pending and forecaster.refits == 0
    end = _jumps(forecaster, start_s=end, ticks=2)  # the tick goes on with the old model meanwhile
    assert forecaster.refit_pending and forecaster.refits == 0 and forecaster.poor_streak == 4
    pool.run_all()
    forecaster.predict(end)
    assert forecaster.refits == 1 and not forecaster.refit_pending and forecaster.poor_streak == 0
    new_model = forecaster._learned.arima
    assert isinstance(new_model, ArimaModel)
    # fitted on the 30-bucket window at submission, then given the 12 buckets that arrived meanwhile
    assert new_model.history_len == 30 + 12
    assert len(pool.jobs) == 0


def test_arima_update_keeps_stored_history_bounded() -> None:
    model = ArimaModel(window_steps=20)
    y = _smooth(120, seed=4)
    model.fit(y[:20])
    for i in range(20, 120, 6):
        model.update(y[i : i + 6])
        assert model.history_len <= 40
    order = model.order
    assert model.order == order and model.predict(5).shape == (5,)


# --- determinism and persistence -------------------------------------------------------------------------------


def test_same_inputs_give_same_forecasts() -> None:
    results = []
    for _ in range(2):
        forecaster = WorkloadForecaster(CONFIG)
        _feed(forecaster, _smooth(300, seed=11))
        results.append(forecaster.predict(300))
    assert results[0] == results[1]


def test_round_trip_predicts_exactly_the_same() -> None:
    original = WorkloadForecaster(CONFIG)
    trace = _smooth(480, seed=5)
    _feed(original, trace[:300])
    restored = WorkloadForecaster.from_bytes(original.to_bytes(), CONFIG)
    assert restored.predict(300) == original.predict(300)
    for end in (360, 420, 480):
        for forecaster in (original, restored):
            forecaster.observe(trace[end - 60 : end], step_s=1, end_s=end)
        assert restored.predict(end) == original.predict(end)
    assert (restored.last_wape, restored.poor_streak, restored.refits) == (
        original.last_wape,
        original.poor_streak,
        original.refits,
    )


def test_round_trip_drops_a_pending_refit_and_resubmits_it() -> None:
    pool = ManualPool()
    forecaster = WorkloadForecaster(CONFIG, refits=PoolRefits(pool))
    _feed(forecaster, _smooth(180))
    assert forecaster.refit_pending
    restored_pool = ManualPool()
    restored = WorkloadForecaster.from_bytes(forecaster.to_bytes(), CONFIG, refits=PoolRefits(restored_pool))
    assert not restored.refit_pending
    restored.observe([1000.0] * 60, step_s=1, end_s=240)
    assert restored.refit_pending and len(restored_pool.jobs) == 1


STORED_V2 = Path(__file__).parents[1] / "data" / "forecaster_v2.json"


def test_a_store_written_before_the_package_split_reads_back_to_the_same_state() -> None:
    """tests/data/forecaster_v2.json was written by the single-module forecaster (seasonality on, an ARIMA fitted, a
    partial bucket open), with the bounds' offsets in records/s: the package reads it and writes it back the same,
    but for the offsets, now in error sizes, which give the margins the stored ones gave."""
    config = CONFIG.model_copy(update={"seasonality": True})
    stored = json.loads(STORED_V2.read_bytes())
    restored = WorkloadForecaster.from_bytes(STORED_V2.read_bytes(), config)
    assert restored.arima_order is not None and restored.history_steps == 30
    written = json.loads(restored.to_bytes())
    for name in ("linear_errors", "arima_errors"):
        in_records = np.asarray(stored[name].pop("offsets"))
        in_sizes = np.asarray(written[name].pop("offset_scales"))
        errors = np.asarray([[np.nan if v is None else v for v in row] for row in stored[name]["errors"]], dtype=float)
        matured = np.isfinite(errors).any(axis=0)
        sizes = np.nanmean(np.abs(errors[:, matured]), axis=0)
        np.testing.assert_allclose(in_sizes[matured] * sizes, in_records[matured], rtol=1e-12)
    assert written == stored
    assert restored.predict(905).start_s == 900  # the open bucket is the first one forecast


def test_restore_refuses_another_resolution() -> None:
    data = WorkloadForecaster(CONFIG).to_bytes()
    with pytest.raises(ValueError, match="resolution_s"):
        WorkloadForecaster.from_bytes(data, CONFIG.model_copy(update={"resolution_s": 5}))


def test_a_failed_background_fit_keeps_serving_the_fallback() -> None:
    pool = ManualPool()
    forecaster = WorkloadForecaster(CONFIG, refits=PoolRefits(pool))
    _feed(forecaster, _smooth(180))
    future, *_ = pool.jobs.pop()
    future.set_exception(RuntimeError("fit diverged"))
    assert forecaster.predict(180).model == "linear"
    assert forecaster.refit_failures == 1 and not forecaster.refit_pending
    forecaster.observe([1000.0] * 60, step_s=1, end_s=240)
    assert forecaster.refit_pending  # tried again on the next tick


def test_a_refit_in_another_process_gives_the_same_model_as_one_in_this_process() -> None:
    """The refit returns the model as data and this process rebuilds it: a process pool (spawned, as the sidecar's)
    and an in-process one serve the same forecasts."""
    trace = _smooth(240, seed=9)
    manual = ManualPool()
    in_process = WorkloadForecaster(CONFIG, refits=PoolRefits(manual))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as processes:
        other_refits = PoolRefits(processes)
        other = WorkloadForecaster(CONFIG, refits=other_refits)
        for forecaster in (in_process, other):
            _feed(forecaster, trace[:180])
        assert other.refit_pending
        other_refits.wait(timeout_s=300)  # wait for the job itself, not for time
        manual.run_all()
        for end in (180, 240):
            if end > 180:
                for forecaster in (in_process, other):
                    forecaster.observe(trace[end - 60 : end], step_s=1, end_s=end)
            assert other.predict(end) == in_process.predict(end)
    assert other.arima_order is not None and other.arima_order == in_process.arima_order


def test_a_damaged_model_from_a_refit_is_refused_and_the_fallback_kept() -> None:
    pool = ManualPool()
    forecaster = WorkloadForecaster(CONFIG, refits=PoolRefits(pool))
    _feed(forecaster, _smooth(180))
    future, *_ = pool.jobs.pop()
    future.set_result({"order": [1, 1], "params": "not numbers"})  # what a broken refit process might send
    assert forecaster.predict(180).model == "linear"
    assert forecaster.refit_failures == 1 and not forecaster.refit_pending


@pytest.mark.parametrize(
    ("history", "n_steps", "expected"),
    [
        # y = 10 + 2x over x = 0..4: the line goes on for 5 steps (20 .. 28), then holds at 28.
        pytest.param([10, 12, 14, 16, 18], 8, [20, 22, 24, 26, 28, 28, 28, 28], id="rising-then-held"),
        # Falling to 0 within the steps it may extend: never below 0.
        pytest.param([8, 6, 4], 4, [2, 0, 0, 0], id="clipped-at-zero"),
        pytest.param([5, 5, 5], 3, [5, 5, 5], id="flat"),
    ],
)
def test_the_linear_fallback_extends_its_slope_only_as_far_as_it_was_fitted(history, n_steps, expected) -> None:
    model = LinearModel(window_steps=10)
    model.fit(np.asarray(history, dtype=float))
    np.testing.assert_allclose(model.predict(n_steps), expected, atol=1e-9)
