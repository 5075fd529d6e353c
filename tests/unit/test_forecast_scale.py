"""The forecast depends on the load's shape, not its scale: the ARIMA is fitted on the series scaled to its level."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import MODEL_LEVEL, ArimaModel, fit_arima


def _load(n: int = 360, seed: int = 3) -> np.ndarray:
    t = np.arange(n)
    return 1000 + 400 * np.sin(2 * np.pi * t / 180) + np.random.default_rng(seed).normal(0, 30, n)


@pytest.mark.parametrize("factor", [1e-3, 1e6, 1e12], ids=["milli", "mega", "tera"])
def test_the_same_shape_at_another_scale_gets_the_same_forecast_scaled(factor: float) -> None:
    y = _load()
    base = fit_arima(y, window_steps=360, seasonal_period_steps=0)
    scaled = fit_arima(y * factor, window_steps=360, seasonal_period_steps=0)
    assert scaled.order == base.order
    np.testing.assert_allclose(scaled.predict(30) / factor, base.predict(30), rtol=5e-3)
    base.update(y[:10])
    scaled.update(y[:10] * factor)
    np.testing.assert_allclose(scaled.predict(30) / factor, base.predict(30), rtol=5e-3)


def test_the_scale_is_stored_with_the_model_and_older_models_read_as_unscaled() -> None:
    y = _load() * 1e6
    model = fit_arima(y, window_steps=360, seasonal_period_steps=0)
    state = model.to_json()
    assert state is not None and state["scale"] == pytest.approx(np.mean(np.abs(y)) / MODEL_LEVEL)
    again = ArimaModel.from_json(state, window_steps=360, seasonal_period_steps=0)
    np.testing.assert_allclose(again.predict(12), model.predict(12), rtol=1e-9)
    # A model stored before the scaling filtered the series itself: scale 1 reads it as it was.
    old = {**state, "y": [v * state["scale"] for v in state["y"]]}
    del old["scale"]
    assert ArimaModel.from_json(old, window_steps=360, seasonal_period_steps=0)._scale == 1.0
