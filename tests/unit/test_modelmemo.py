"""The model memo: a shared ARIMA answers as the plain model would, bit for bit — from the memo when a model of its
lineage did the same before (a private copy), computing itself otherwise (any other bit misses), replaying what it
skipped when it must; the forecaster around it is the plain one, tick for tick; the LRU keeps at most its bound."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import (
    ArimaModel,
    FitCache,
    FitJob,
    InlineRefits,
    ModelMemo,
    SharedArima,
    WorkloadForecaster,
    run_fit,
)
from daedalus_spark.analyze.forecast.modelmemo import fit_lineage, updated_lineage
from daedalus_spark.config import ForecastConfig

# Small windows keep auto-ARIMA fits well under a second; a refit every 2 minutes (12 buckets) and short horizons.
CONFIG = ForecastConfig(
    resolution_s=10, history_window_s=300, min_history_s=120, linear_window_s=60, horizon_s=120, refit_interval_s=120
)


def _series(seed: int = 0, n: int = 48, start: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(start, start + n, dtype=float)
    return 1000 + 200 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 20, n)


JOB = FitJob(_series(), window_steps=48, seasonal_period_steps=0)
# What forecasters feed their models: six buckets a tick.
TICKS = [_series(seed=1, n=6, start=48 + 6 * k) for k in range(8)]  # 48 buckets


def _shared(memo: ModelMemo, job: FitJob = JOB) -> ArimaModel:
    model = memo.fitting(run_fit)(job)
    assert isinstance(model, SharedArima)
    return model


def _plain(job: FitJob = JOB) -> ArimaModel:
    model = run_fit(job)
    assert isinstance(model, ArimaModel)
    return model


def _same(a: tuple[np.ndarray, np.ndarray | None], b: tuple[np.ndarray, np.ndarray | None]) -> None:
    assert a[0].tobytes() == b[0].tobytes()
    assert (a[1] is None) == (b[1] is None)
    if a[1] is not None and b[1] is not None:
        assert a[1].tobytes() == b[1].tobytes()


def test_a_forecast_never_changes_the_model_which_is_what_lets_a_shared_model_skip_updates() -> None:
    asked, never = _plain(), _plain()
    for y in TICKS:  # 48 buckets now and 48 below on a 48-step window: the bounded re-estimate runs too
        for steps, level in ((13, 0.9), (5, 0.7), (13, None)):
            asked.predict_interval(steps, level)
        asked.update(y)
        never.update(y)
    for y in TICKS:
        asked.update(y + 50.0)
        never.update(y + 50.0)
    assert asked.to_json() == never.to_json()
    _same(asked.predict_interval(13, 0.9), never.predict_interval(13, 0.9))


def test_a_hit_is_the_plain_models_answer_bit_for_bit_and_a_private_copy() -> None:
    memo, plain = ModelMemo(), _plain()
    first, second = _shared(memo), _shared(memo)
    for y in TICKS[:3]:
        plain.update(y)
        first.update(y)
    expected = plain.predict_interval(13, 0.9)
    _same(first.predict_interval(13, 0.9), expected)
    hits, misses = memo.hits, memo.misses
    for y in TICKS[:3]:
        second.update(y)  # made by `first` before: skipped
    got = second.predict_interval(13, 0.9)
    assert (memo.hits - hits, memo.misses - misses, memo.replayed) == (4, 0, 0)
    _same(got, expected)
    got[0][:] = -1.0  # the caller's copy only: the memo's stays as it was
    _same(second.predict_interval(13, 0.9), expected)
    assert second.to_json() == plain.to_json()  # the skipped updates, replayed on demand
    assert memo.replayed == 3


@pytest.mark.parametrize(
    ("change", "what"),
    [
        pytest.param(lambda y: np.concatenate([y[:-1], [np.nextafter(y[-1], np.inf)]]), "last bit", id="last-bit"),
        pytest.param(lambda y: y[:-1], "shorter", id="one-bucket-fewer"),
        pytest.param(lambda y: y[::-1].copy(), "order", id="same-values-reversed"),
    ],
)
def test_an_update_differing_in_any_bit_misses_and_is_computed(change: object, what: str) -> None:
    memo = ModelMemo()
    first = _shared(memo)
    first.update(TICKS[0])
    first.predict_interval(13, 0.9)
    other = change(TICKS[0])  # type: ignore[operator]
    assert updated_lineage(fit_lineage(JOB), other) != updated_lineage(fit_lineage(JOB), TICKS[0]), what
    second, plain = _shared(memo), _plain()
    misses = memo.misses
    second.update(other)
    plain.update(other)
    _same(second.predict_interval(13, 0.9), plain.predict_interval(13, 0.9))
    assert memo.misses - misses == 2  # the update and the forecast after it
    assert second.to_json() == plain.to_json()


@pytest.mark.parametrize(
    ("steps", "level"),
    [
        pytest.param(14, 0.9, id="one-step-more"),
        pytest.param(13, 0.8, id="another-level"),
        pytest.param(13, None, id="no-level"),
    ],
)
def test_another_forecast_of_the_same_model_misses(steps: int, level: float | None) -> None:
    memo = ModelMemo()
    _shared(memo).predict_interval(13, 0.9)
    misses = memo.misses
    _same(_shared(memo).predict_interval(steps, level), _plain().predict_interval(steps, level))
    assert memo.misses - misses == 1


def test_another_fit_is_another_lineage() -> None:
    assert fit_lineage(FitJob(_series(), window_steps=40, seasonal_period_steps=0)) != fit_lineage(JOB)
    assert fit_lineage(FitJob(_series(seed=2), window_steps=48, seasonal_period_steps=0)) != fit_lineage(JOB)
    assert fit_lineage(FitJob(_series(), window_steps=48, seasonal_period_steps=0)) == fit_lineage(JOB)


def test_a_model_that_parts_mid_run_replays_what_it_skipped_and_goes_on_as_the_plain_model() -> None:
    memo, plain = ModelMemo(), _plain()
    leader = _shared(memo)
    for y in TICKS:
        leader.update(y)
        leader.predict_interval(13, 0.9)
    follower = _shared(memo)
    for k, y in enumerate(TICKS):
        if k == 2:  # a forecast no model of this lineage gave: replays the two skipped updates
            _same(follower.predict_interval(13, 0.7), plain.predict_interval(13, 0.7))
            assert memo.replayed == 2
        y = y + 1.0 if k == 5 else y  # parts from the leader here: replays the three skipped since, computes
        follower.update(y)
        plain.update(y)
        _same(follower.predict_interval(13, 0.9), plain.predict_interval(13, 0.9))
    assert memo.replayed == 5
    assert follower.to_json() == plain.to_json()
    assert follower.history_len == plain.history_len


def test_a_failing_update_is_never_kept_so_the_next_model_fails_too(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = ModelMemo()
    calls: list[int] = []

    def failing(self: ArimaModel, y_new: np.ndarray) -> None:
        calls.append(len(y_new))
        raise np.linalg.LinAlgError("diverged")

    first, second = _shared(memo), _shared(memo)
    monkeypatch.setattr(ArimaModel, "update", failing)
    for model in (first, second):
        with pytest.raises(np.linalg.LinAlgError):
            model.update(TICKS[0])
    assert calls == [6, 6] and len(memo) == 0


def test_a_shared_model_is_not_refitted() -> None:
    model = _shared(ModelMemo())
    with pytest.raises(TypeError, match="not refitted"):
        model.fit(_series())
    with pytest.raises(TypeError, match="not refitted"):
        model.deseasonalize(_series(), 24)


def _ticks(seed: int, minutes: int) -> Iterator[tuple[list[float], float]]:
    rng = np.random.default_rng(seed)
    t = np.arange(minutes * 60, dtype=float)
    load = 1000 + 300 * np.sin(t / 400) + rng.normal(0, 30, len(t))
    load[900:1200] *= 1.6  # a jump the ARIMA cannot foresee: poor forecasts, the fallback, a refit after a streak
    for end in range(60, len(t) + 1, 60):
        yield load[end - 60 : end].tolist(), float(end)


def _state(f: WorkloadForecaster) -> tuple[object, ...]:
    """What the controller reads (`to_bytes` only at the end: it makes a shared model replay what it skipped)."""
    return (f.last_wape, f.poor_streak, f.refits, f.using_fallback, f.refit_failures, f.arima_order, f.history_steps)


@pytest.mark.parametrize(
    "skip",
    [
        pytest.param(frozenset(), id="forecasts-every-tick"),
        pytest.param(frozenset({4, 5, 11, 12, 13, 20}), id="skips-forecasts-after-its-own-rescales"),
    ],
)
def test_a_forecaster_on_shared_models_is_the_plain_forecaster_tick_for_tick(skip: frozenset[int]) -> None:
    memo, fits = ModelMemo(), FitCache()
    config = CONFIG.model_copy(update={"poor_forecasts_before_refit": 3})
    leader = WorkloadForecaster(config, refits=InlineRefits(memo.fitting(fits.fit)))
    for workload, end in _ticks(5, 30):  # another candidate ran the window first, forecasting on every tick
        leader.observe(workload, step_s=1.0, end_s=end)
        leader.predict(end)
    hits = memo.hits
    shared = WorkloadForecaster(config, refits=InlineRefits(memo.fitting(fits.fit)))
    plain = WorkloadForecaster(config)
    for k, (workload, end) in enumerate(_ticks(5, 30)):
        for f in (shared, plain):
            f.observe(workload, step_s=1.0, end_s=end)
        if k not in skip:  # the controller forecasts only out of warm-up
            assert shared.predict(end) == plain.predict(end)
        assert _state(shared) == _state(plain), k
    assert shared.to_bytes() == plain.to_bytes()
    assert plain.refits > 0  # the run went through refits
    assert memo.hits - hits > 30  # most of the leader's work was shared


def test_the_lru_keeps_at_most_its_bound_and_drops_the_least_recently_used() -> None:
    memo = ModelMemo(2)
    a, b, c = (bytes([i]) * 32 for i in (1, 2, 3))
    memo.keep_update(a)
    memo.keep_update(b)
    assert memo.updated(a)  # a is now the most recently used
    memo.keep_update(c)  # drops b
    assert len(memo) == 2
    assert memo.updated(a) and memo.updated(c) and not memo.updated(b)
    memo.keep_forecast(a, 3, 0.9, (np.zeros(3), None))  # drops a's update
    assert len(memo) == 2 and not memo.updated(a) and memo.forecast(a, 3, 0.9) is not None


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        ModelMemo(0)
