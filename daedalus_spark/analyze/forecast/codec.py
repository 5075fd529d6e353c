"""Analyze: what the forecaster has learned, and its stored form — JSON data, no code, read back as untrusted input."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daedalus_spark.analyze.forecast.intervals import HorizonErrors
from daedalus_spark.analyze.forecast.models import MAX_STORED_VALUE, ArimaModel
from daedalus_spark.analyze.forecast.resample import Buckets
from daedalus_spark.analyze.forecast.scoring import NUMERIC_FAILURES
from daedalus_spark.untrusted import Damaged, boolean, integer, mapping, number, numbers, optional_number
from daedalus_spark.untrusted import field as field_of

_log = logging.getLogger(__name__)

# Version of the forecaster's stored JSON; another version is relearned, not guessed at.
STATE_VERSION = 2

ScoredForecast = tuple[int, np.ndarray, bool]  # (first bucket, values, is_arima)


@dataclass
class Learned:
    """Everything the forecaster has learned, all of which its stored JSON keeps; sized by the config."""

    buckets: Buckets
    linear_errors: HorizonErrors
    arima_errors: HorizonErrors
    history: np.ndarray = field(default_factory=lambda: np.empty(0))
    arima: ArimaModel | None = None
    scored_forecast: ScoredForecast | None = None
    last_wape: float | None = None
    last_poor: bool = False
    poor_streak: int = 0
    refits: int = 0
    refit_failures: int = 0
    steps_since_fit: int = 0  # buckets observed since the latest (re)fit was requested


def encode(learned: Learned) -> bytes:
    """`learned` as JSON bytes (the keys in a fixed order: the same state gives the same bytes)."""
    s, scored = learned, learned.scored_forecast
    state = {
        "version": STATE_VERSION,
        "resolution_s": s.buckets.resolution_s,
        "buckets": s.buckets.to_json(),
        "history": [float(v) for v in s.history],
        "arima": None if s.arima is None else s.arima.to_json(),
        "scored_forecast": None
        if scored is None
        else {
            "start": scored[0],
            "values": [float(v) for v in scored[1]],
            "is_arima": scored[2],
        },
        "last_wape": s.last_wape,
        "last_poor": s.last_poor,
        "poor_streak": s.poor_streak,
        "refits": s.refits,
        "refit_failures": s.refit_failures,
        "steps_since_fit": s.steps_since_fit,
        "linear_errors": s.linear_errors.to_json(),
        "arima_errors": s.arima_errors.to_json(),
    }
    # A WAPE against an all-zero window is +inf; JSON has no infinity, so it is written as null-with-a-flag.
    if s.last_wape is not None and math.isinf(s.last_wape):
        state["last_wape"], state["last_wape_infinite"] = None, True
    return json.dumps(state, allow_nan=False, separators=(",", ":")).encode()


def decode(data: bytes, learned: Learned, *, keep_steps: int, window_steps: int, season_steps: int) -> None:
    """Restore `learned` (fresh, sized by the config) from `encode`'s bytes; the input is untrusted: anything
    malformed raises `ValueError` naming it. An ARIMA that cannot be rebuilt is dropped with a warning (the
    forecaster refits it from the restored history); the rest is kept."""
    raw = _parsed(data, learned.buckets.resolution_s)
    _restore_fields(learned, raw, keep_steps)
    _restore_arima(learned, field_of(raw, "arima", "forecaster"), window_steps, season_steps)


def _parsed(data: bytes, resolution_s: float) -> Mapping[str, Any]:
    try:
        raw = mapping(json.loads(data.decode("utf-8")), "forecaster")
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise Damaged(f"forecaster: not our JSON ({exc.__class__.__name__})") from None
    if field_of(raw, "version", "forecaster") != STATE_VERSION:
        raise Damaged(
            f"forecaster: unknown stored version {raw['version']!r:.20} (this WorkloadForecaster reads version "
            f"{STATE_VERSION})"
        )
    stored_res = number(field_of(raw, "resolution_s", "forecaster"), "forecaster.resolution_s")
    if stored_res != resolution_s:
        raise ValueError(f"stored forecaster uses resolution_s={stored_res}, config has {resolution_s}")
    return raw


def _restore_fields(s: Learned, raw: Mapping[str, Any], keep_steps: int) -> None:
    big = MAX_STORED_VALUE
    s.buckets.restore_json(field_of(raw, "buckets", "forecaster"))
    history = numbers(
        field_of(raw, "history", "forecaster"),
        "forecaster.history",
        max_len=10 * keep_steps + 10,
        lo=-big,
        hi=big,
    )
    s.history = np.asarray(history, dtype=float)[-keep_steps:]
    s.scored_forecast = _restored_scored(field_of(raw, "scored_forecast", "forecaster"))
    s.last_wape = optional_number(field_of(raw, "last_wape", "forecaster"), "forecaster.last_wape", lo=0.0)
    if raw.get("last_wape_infinite") is True:
        s.last_wape = math.inf
    s.last_poor = boolean(field_of(raw, "last_poor", "forecaster"), "forecaster.last_poor")
    counters = {
        k: integer(field_of(raw, k, "forecaster"), f"forecaster.{k}", lo=0, hi=2**53)
        for k in ("poor_streak", "refits", "refit_failures")
    }
    s.poor_streak, s.refits, s.refit_failures = counters["poor_streak"], counters["refits"], counters["refit_failures"]
    s.steps_since_fit = integer(
        field_of(raw, "steps_since_fit", "forecaster"), "forecaster.steps_since_fit", lo=0, hi=2**53
    )
    s.linear_errors.restore_json(field_of(raw, "linear_errors", "forecaster"))
    s.arima_errors.restore_json(field_of(raw, "arima_errors", "forecaster"))


def _restored_scored(raw: Any) -> ScoredForecast | None:
    if raw is None:
        return None
    raw = mapping(raw, "forecaster.scored_forecast")
    where = "forecaster.scored_forecast"
    start = integer(
        field_of(raw, "start", where), f"{where}.start", lo=-int(MAX_STORED_VALUE), hi=int(MAX_STORED_VALUE)
    )
    values = numbers(field_of(raw, "values", where), f"{where}.values", max_len=100_000, lo=0.0, hi=MAX_STORED_VALUE)
    return start, np.asarray(values, dtype=float), boolean(field_of(raw, "is_arima", where), f"{where}.is_arima")


def _restore_arima(s: Learned, raw: Any, window_steps: int, season_steps: int) -> None:
    if raw is None:
        return
    try:
        s.arima = ArimaModel.from_json(raw, window_steps=window_steps, seasonal_period_steps=season_steps)
    except (Damaged, *NUMERIC_FAILURES) as exc:
        _log.warning("stored ARIMA model dropped, refitting it from the stored history: %s", exc)
        s.arima = None
        s.last_poor = False
        s.poor_streak = 0
        s.scored_forecast = None
