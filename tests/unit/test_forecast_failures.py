"""A numerical failure inside ARIMA never reaches the tick: the forecaster falls back and fits afresh."""

import numpy as np

from daedalus_spark.analyze.forecast import WorkloadForecaster
from daedalus_spark.config import ForecastConfig


class Degenerate:
    """Stands in for a fitted ARIMA whose state-space update fails (statsmodels raises LinAlgError)."""

    order = (1, 0, 0)
    history_len = 0

    def update(self, y_new):
        raise np.linalg.LinAlgError("Schur decomposition solver error.")

    def predict(self, n_steps):
        raise np.linalg.LinAlgError("Schur decomposition solver error.")

    def predict_interval(self, n_steps, level):
        raise np.linalg.LinAlgError("Schur decomposition solver error.")


def test_failed_update_and_predict_fall_back_without_raising():
    config = ForecastConfig(min_history_s=600, resolution_s=10)
    f = WorkloadForecaster(config)  # synchronous refits
    rng = np.random.default_rng(0)
    for k in range(12):
        f.observe(list(1000 + rng.normal(0, 20, 60)), step_s=1.0, end_s=60.0 * (k + 1))
    f._learned.arima = Degenerate()
    assert f.predict(720.0).model == "linear"  # predict failed: the model is dropped
    f._learned.arima = Degenerate()
    f.observe(list(1000 + rng.normal(0, 20, 60)), step_s=1.0, end_s=780.0)
    forecast = f.predict(780.0)
    assert not isinstance(f._learned.arima, Degenerate)
    assert all(v >= 0 for v in forecast.values_per_s)
