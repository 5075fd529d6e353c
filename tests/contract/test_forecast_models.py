"""Contract: every ForecastModel fits, updates and predicts alike (shapes, non-negative, deterministic, intervals)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import ArimaModel, ForecastModel, LinearModel

ModelFactory = Callable[[], ForecastModel]

FACTORIES: dict[str, ModelFactory] = {
    "arima": lambda: ArimaModel(window_steps=60),
    "linear": lambda: LinearModel(window_steps=10),
}


def _series(n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    return 1000 + 300 * np.sin(t / 8) + rng.normal(0, 20, n)


@pytest.fixture(params=sorted(FACTORIES), ids=sorted(FACTORIES))
def factory(request: pytest.FixtureRequest) -> ModelFactory:
    return FACTORIES[request.param]


def test_predict_has_the_requested_length(factory: ModelFactory) -> None:
    model = factory()
    model.fit(_series(50))
    for n in (1, 7, 30):
        assert model.predict(n).shape == (n,)
    assert model.predict(0).shape == (0,)


def test_update_then_predict_keeps_the_shape(factory: ModelFactory) -> None:
    model = factory()
    y = _series(56)
    model.fit(y[:50])
    model.update(y[50:])
    model.update(np.empty(0))  # a tick without a complete bucket
    assert model.predict(12).shape == (12,)
    assert np.all(np.isfinite(model.predict(12)))


def test_predictions_never_negative(factory: ModelFactory) -> None:
    model = factory()
    falling = np.linspace(5000, 50, 50) + np.random.default_rng(1).normal(0, 5, 50)
    model.fit(falling)
    assert np.all(model.predict(40) >= 0)


def test_predictions_are_deterministic(factory: ModelFactory) -> None:
    y = _series(56)
    runs = []
    for _ in range(2):
        model = factory()
        model.fit(y[:50])
        model.update(y[50:])
        runs.append(model.predict(15))
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], model.predict(15))  # predicting does not change the model


def test_forecasts_a_steady_series_near_its_level(factory: ModelFactory) -> None:
    y = 2000 + np.random.default_rng(3).normal(0, 10, 60)
    model = factory()
    model.fit(y)
    assert np.all(np.abs(model.predict(10) - 2000) < 200)


@pytest.mark.parametrize("level", [None, 0.9], ids=["point", "level-0.9"])
def test_predict_interval_gives_the_point_forecast_and_a_bound_above_it(factory: ModelFactory, level) -> None:
    model = factory()
    model.fit(_series(56))
    values, upper = model.predict_interval(12, level)
    np.testing.assert_array_equal(values, model.predict(12))  # the same point forecast either way
    if level is None:
        assert upper is None  # no level asked, no bound
    elif upper is not None:  # a model may have no bound of its own (the line: the forecaster measures its errors)
        assert upper.shape == (12,) and np.all(np.isfinite(upper)) and np.all(upper >= values)
    empty_values, _ = model.predict_interval(0, level)
    assert empty_values.shape == (0,)
