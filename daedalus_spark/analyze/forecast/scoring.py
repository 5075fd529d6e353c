"""Analyze: how far a forecast was off — WAPE, and the hold-out WAPE that picks among auto-ARIMA's candidates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

# What statsmodels raises when a state-space fit or update degenerates (seen: Schur decomposition errors).
NUMERIC_FAILURES = (np.linalg.LinAlgError, ValueError, FloatingPointError)
# Origins of the hold-out forecasts that pick among auto-ARIMA's candidates, a third of a horizon apart.
_HOLDOUT_ORIGINS = 5


def wape(actual: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray) -> float:
    """Weighted absolute percentage error: sum|a - p| / sum|a|, as a ratio.

    When every actual is zero the ratio is undefined: it is 0.0 if the prediction is zero as well (perfect),
    else +inf (any error against nothing is infinitely bad). An empty pair is therefore 0.0.
    """
    a = np.asarray(actual, dtype=float)
    p = np.asarray(predicted, dtype=float)
    if a.shape != p.shape:
        raise ValueError(f"actual has shape {a.shape}, predicted {p.shape}")
    error = float(np.abs(a - p).sum())
    scale = float(np.abs(a).sum())
    if scale == 0.0:
        return 0.0 if error == 0.0 else math.inf
    return error / scale


def holdout_wape(model: Any, y: np.ndarray, level: np.ndarray, horizon_steps: int) -> float:
    """WAPE of `model`'s multi-step forecasts from a few origins late in `y` (its own filtered states, its
    parameters as fitted on all of `y`): the error it would have made forecasting the recent past.

    `level` is the series on the workload's scale (the same as `y` without a profile): the denominator.
    """
    n = len(y)
    h = min(horizon_steps, n // 2)
    origins = [o for o in (n - h - k * max(1, h // 3) for k in range(_HOLDOUT_ORIGINS)) if o >= n // 4]
    if h < 1 or not origins:
        return math.inf
    error = scale = 0.0
    try:
        for o in origins:
            pred = model.arima_res_.get_prediction(start=o, end=o + h - 1, dynamic=True).predicted_mean
            shift = level[o : o + h] - y[o : o + h]  # the profile, when there is one
            forecast = np.clip(np.asarray(pred, dtype=float) + shift, 0.0, None)
            error += float(np.abs(level[o : o + h] - forecast).sum())
            scale += float(np.abs(level[o : o + h]).sum())
    except NUMERIC_FAILURES:
        return math.inf
    if not math.isfinite(error):
        return math.inf
    return error / scale if scale > 0 else (0.0 if error == 0 else math.inf)
