"""Knowledge: what the reports need beyond the learned models — recent forecasts, observed workload, latest capacity."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from daedalus_spark.analyze.forecast.resample import window_means
from daedalus_spark.domain import CapacityTable, ExecutorCapacity, Forecast, Observation
from daedalus_spark.untrusted import (
    Damaged,
    check_version,
    integer,
    mapping,
    number,
    numbers,
    optional_number,
    text,
)
from daedalus_spark.untrusted import field as stored

FORECASTS_KEPT = 120  # the forecasts of the last 120 ticks: enough to score one against what came
WORKLOAD_KEPT = 3000  # observed workload, one value per forecast resolution step
STATE_VERSION = 1
_BACKFILL_LINES, _BACKFILL_LINE_MAX = 50, 500  # a stored report of the start-up's backfill is read back this far
MAX_RATE_PER_S = 1e15  # records/s: a stored rate beyond this (or NaN, or infinite) is damage, as for metric inputs
# Stores written before "worker" was renamed "executor" say "workers" and "worker_id" in the capacity table:
# still read.
_LEGACY_EXECUTORS_KEY = "workers"
_LEGACY_EXECUTOR_ID_KEY = "worker_id"


@dataclass(frozen=True)
class ForecastRecord:
    time_s: float
    model: str  # "arima" or "linear"
    arima_order: tuple[int, int, int] | None
    refits: int
    last_wape: float | None  # of the previous forecast, over what came since
    start_s: float
    step_s: float
    values_per_s: tuple[float, ...]
    # The interval's upper bound per step, and the load the planner provisioned for (empty in stores saved before
    # they were kept).
    upper_per_s: tuple[float, ...] = ()
    planned_per_s: tuple[float, ...] = ()


@dataclass
class History:
    forecasts: deque[ForecastRecord] = field(default_factory=lambda: deque(maxlen=FORECASTS_KEPT))
    workload: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=WORKLOAD_KEPT))
    latest_table: CapacityTable | None = None
    # What the latest start-up read back from the job's past (monitor/backfill.py): what it learned, gaps, refusals.
    backfill: tuple[str, ...] = ()

    def add_forecast(self, record: ForecastRecord) -> None:
        self.forecasts.append(record)

    def add_workload(self, obs: Observation, resolution_s: float) -> None:
        """The window's workload averaged per resolution step, stamped with each step's end (on the forecaster's
        grid); a step already recorded is not recorded again."""
        self.add_workload_series(obs.workload_per_s, step_s=obs.step_s, end_s=obs.time_s, resolution_s=resolution_s)

    def add_workload_series(
        self, workload_per_s: Sequence[float], *, step_s: float, end_s: float, resolution_s: float
    ) -> None:
        """`add_workload` of samples one per `step_s`, the last ending at `end_s` (a stretch of the past)."""
        last = self.workload[-1][0] if self.workload else -math.inf
        means = window_means(workload_per_s, step_s=step_s, end_s=end_s, resolution_s=resolution_s)
        self.workload.extend((t, mean) for t, mean in means if t > last)

    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "forecasts": [asdict(f) for f in self.forecasts],
            "workload": [list(p) for p in self.workload],
            "latest_table": None if self.latest_table is None else _table_to_json(self.latest_table),
            "backfill": list(self.backfill),
        }

    @classmethod
    def from_state(cls, raw: Any, where: str = "history", damage: list[str] | None = None) -> History:
        """The stored history; each damaged record (a forecast, a workload point, the capacity table) is left out
        with one line in `damage` naming it, the rest kept. Without `damage`, the first damaged record raises."""
        raw = mapping(raw, where)
        check_version(raw, where, STATE_VERSION)
        history = cls()
        forecasts = _records(raw, "forecasts", where, FORECASTS_KEPT)
        workload = _records(raw, "workload", where, WORKLOAD_KEPT)
        history.forecasts.extend(_kept(forecasts, _forecast_from_json, f"{where}.forecasts", damage))
        history.workload.extend(_kept(workload, _workload_point, f"{where}.workload", damage))
        table = raw.get("latest_table")
        if table is not None:
            kept = _kept([table], lambda t, w: _table_from_json(mapping(t, w), w), f"{where}.latest_table", damage)
            history.latest_table = kept[0] if kept else None
        lines = raw.get("backfill", [])
        if isinstance(lines, list):
            history.backfill = tuple(str(line)[:_BACKFILL_LINE_MAX] for line in lines[:_BACKFILL_LINES])
        return history


R = TypeVar("R")


def _records(raw: Mapping[str, Any], key: str, where: str, most: int) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise Damaged(f"{where}.{key}: expected a list, got {type(value).__name__}")
    return value[-most:]


def _kept(items: list[Any], parse: Callable[[Any, str], R], where: str, damage: list[str] | None) -> list[R]:
    kept = []
    for i, item in enumerate(items):
        listed = not where.endswith("latest_table")
        name = f"{where}[{i}]" if listed else where
        try:
            kept.append(parse(item, name))
        except (Damaged, KeyError, TypeError, ValueError) as exc:
            if damage is None:
                raise
            reason = str(exc) if isinstance(exc, Damaged) else f"{name}: {type(exc).__name__}: {exc}"
            damage.append(f"damaged record left out{f' (of {len(items)})' if listed else ''}: {reason}")
    return kept


def _forecast_from_json(raw: Any, where: str) -> ForecastRecord:
    f = {k: list(v) if isinstance(v, tuple) else v for k, v in mapping(raw, where).items()}  # to_state's tuples
    order = f.get("arima_order")
    if order is not None:
        parts = numbers(order, f"{where}.arima_order", max_len=3, lo=0, hi=100)
        if len(parts) != 3 or any(p != int(p) for p in parts):
            raise Damaged(f"{where}.arima_order: expected three whole numbers, got {order!r:.40}")
    return ForecastRecord(
        time_s=number(stored(f, "time_s", where), f"{where}.time_s", lo=0.0),
        model=text(stored(f, "model", where), f"{where}.model", max_len=40),
        arima_order=None if order is None else (int(parts[0]), int(parts[1]), int(parts[2])),
        refits=integer(stored(f, "refits", where), f"{where}.refits", lo=0, hi=2**31),
        last_wape=optional_number(stored(f, "last_wape", where), f"{where}.last_wape", lo=0.0, allow_inf=True),
        start_s=number(stored(f, "start_s", where), f"{where}.start_s", lo=0.0),
        step_s=number(stored(f, "step_s", where), f"{where}.step_s", lo=1e-3, hi=86_400.0),
        values_per_s=tuple(_rates(stored(f, "values_per_s", where), f"{where}.values_per_s")),
        upper_per_s=tuple(_rates(f.get("upper_per_s", []), f"{where}.upper_per_s")),
        planned_per_s=tuple(_rates(f.get("planned_per_s", []), f"{where}.planned_per_s")),
    )


def _rates(value: Any, where: str) -> list[float]:
    return numbers(value, where, max_len=100_000, lo=0.0, hi=MAX_RATE_PER_S)


def _signed_rate(value: Any, where: str) -> float:
    return number(value, where, lo=-MAX_RATE_PER_S, hi=MAX_RATE_PER_S)


def _workload_point(raw: Any, where: str) -> tuple[float, float]:
    point = numbers(raw, where, max_len=2)
    if len(point) != 2:
        raise Damaged(f"{where}: expected [time, records/s], got {raw!r:.40}")
    return number(point[0], f"{where} time", lo=0.0), number(point[1], f"{where} records/s", lo=0.0, hi=MAX_RATE_PER_S)


def forecast_record(
    time_s: float,
    forecast: Forecast,
    *,
    arima_order: tuple[int, int, int] | None,
    refits: int,
    last_wape: float | None,
    planned_per_s: tuple[float, ...] = (),
) -> ForecastRecord:
    return ForecastRecord(
        time_s,
        forecast.model,
        arima_order,
        refits,
        last_wape,
        forecast.start_s,
        forecast.step_s,
        _rounded(forecast.values_per_s),
        _rounded(forecast.upper_bound().values_per_s),
        _rounded(planned_per_s),
    )


def _rounded(values: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(round(v, 3) for v in values)


def _table_to_json(t: CapacityTable) -> dict[str, Any]:
    return {
        "current_scaleout": t.current_scaleout,
        "current_per_s": t.current_per_s,
        "per_scaleout_per_s": list(t.per_scaleout_per_s),
        "observed_scaleouts": sorted(t.observed_scaleouts),
        "executors": [asdict(w) for w in t.executors],
        "catch_up_per_scaleout_per_s": list(t.catch_up_per_scaleout_per_s),
        "notes": list(t.notes),
        "current_at_trigger_per_s": t.current_at_trigger_per_s,
    }


def _table_from_json(raw: Mapping[str, Any], where: str = "latest_table") -> CapacityTable:
    raw = {k: list(v) if isinstance(v, tuple) else v for k, v in raw.items()}
    executors = raw["executors"] if "executors" in raw else stored(raw, _LEGACY_EXECUTORS_KEY, where)
    scaleouts = numbers(stored(raw, "observed_scaleouts", where), f"{where}.observed_scaleouts", max_len=100_000, lo=1)
    if not isinstance(executors, list):
        raise Damaged(f"{where}.executors: expected a list, got {type(executors).__name__}")
    return CapacityTable(
        current_scaleout=integer(stored(raw, "current_scaleout", where), f"{where}.current_scaleout", lo=0, hi=100_000),
        current_per_s=number(stored(raw, "current_per_s", where), f"{where}.current_per_s", lo=0.0, hi=MAX_RATE_PER_S),
        per_scaleout_per_s=tuple(_rates(stored(raw, "per_scaleout_per_s", where), f"{where}.per_scaleout_per_s")),
        observed_scaleouts=frozenset(int(n) for n in scaleouts),
        executors=tuple(_executor_capacity_from_json(w, f"{where}.executors[{i}]") for i, w in enumerate(executors)),
        catch_up_per_scaleout_per_s=tuple(
            _rates(raw.get("catch_up_per_scaleout_per_s", []), f"{where}.catch_up_per_scaleout_per_s")
        ),
        notes=tuple(text(n, f"{where}.notes", max_len=1000) for n in raw.get("notes", ())),
        current_at_trigger_per_s=optional_number(
            raw.get("current_at_trigger_per_s"), f"{where}.current_at_trigger_per_s", lo=0.0, hi=MAX_RATE_PER_S
        ),  # absent in a store saved before it was kept
    )


def _executor_capacity_from_json(raw: Any, where: str) -> ExecutorCapacity:
    raw = dict(mapping(raw, where))
    if _LEGACY_EXECUTOR_ID_KEY in raw and "executor_id" not in raw:
        raw["executor_id"] = raw.pop(_LEGACY_EXECUTOR_ID_KEY)
    return ExecutorCapacity(
        executor_id=text(stored(raw, "executor_id", where), f"{where}.executor_id"),
        samples=integer(stored(raw, "samples", where), f"{where}.samples", lo=0, hi=2**62),
        intercept_per_s=_signed_rate(stored(raw, "intercept_per_s", where), f"{where}.intercept_per_s"),
        slope_per_s=_signed_rate(stored(raw, "slope_per_s", where), f"{where}.slope_per_s"),
        own_capacity_per_s=_signed_rate(stored(raw, "own_capacity_per_s", where), f"{where}.own_capacity_per_s"),
        load_share_ratio=number(stored(raw, "load_share_ratio", where), f"{where}.load_share_ratio", lo=0.0, hi=1e6),
        capacity_per_s=_signed_rate(stored(raw, "capacity_per_s", where), f"{where}.capacity_per_s"),
        method=text(stored(raw, "method", where), f"{where}.method", max_len=40),
    )
