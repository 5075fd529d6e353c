"""Analyze: predicted recovery time of a rescale (§3.4) — backlog at restart, then spare capacity over the forecast."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def replay_backlog_records(
    recent_workload_per_s: Sequence[float], *, step_s: float, checkpoint_interval_s: float
) -> float:
    """Worst case: every record of the last checkpoint interval is processed again after the restart."""
    if checkpoint_interval_s <= 0 or not recent_workload_per_s:
        return 0.0
    steps = min(len(recent_workload_per_s), math.ceil(checkpoint_interval_s / step_s))
    covered_s = steps * step_s
    tail = np.asarray(recent_workload_per_s[-steps:], dtype=float)
    # Scale when the sample grid does not fall on the interval exactly (e.g. 15-s samples, 10-s checkpoints).
    return float(tail.sum() * step_s * checkpoint_interval_s / covered_s)


def warm_capacity_per_s(before: Any, after: Any, ratio: Any) -> Any:
    """What a rescale from capacity `before` to `after` carries while its new executors warm up: the old capacity
    plus `ratio` of the difference (floats or numpy arrays alike, with the same arithmetic)."""
    return before + ratio * (after - before)


def predict_recovery_s(
    *,
    capacity_per_s: float,
    forecast_per_second: Sequence[float],
    downtime_s: float,
    replay_records: float,
    lag_records: float,
    warmup_s: float = 0.0,
    warmup_capacity_per_s: float | None = None,
) -> float:
    """Seconds from the stop until the backlog is worked off, or infinity if not within the forecast.

    `forecast_per_second[t]` is the predicted arrival rate t seconds after processing stops. The backlog at the
    restart is the replayed records + the lag + what arrives during the downtime; afterwards every second adds
    (capacity - arrivals) of headroom until the headroom covers the backlog, with `warmup_capacity_per_s` in the
    place of the capacity for the first `warmup_s` of them (new executors warming up). Downtime is counted once.
    """
    forecast = np.maximum(np.asarray(forecast_per_second, dtype=float), 0.0)
    down = max(0, math.ceil(downtime_s))
    if down > len(forecast):
        return math.inf
    backlog = replay_records + max(lag_records, 0.0) + float(forecast[:down].sum())
    if backlog <= 0:
        return float(down)
    capacity = np.full(len(forecast) - down, float(capacity_per_s))
    if warmup_capacity_per_s is not None:
        capacity[: max(0, math.ceil(warmup_s))] = warmup_capacity_per_s
    headroom = np.cumsum(capacity - forecast[down:])
    caught_up = np.flatnonzero(headroom >= backlog)
    if caught_up.size == 0:
        return math.inf
    return float(down + caught_up[0] + 1)
