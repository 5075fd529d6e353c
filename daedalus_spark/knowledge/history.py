"""Knowledge: what the reports need beyond the learned models — recent forecasts, observed workload, latest capacity."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from daedalus_spark.analyze.forecast.resample import window_means
from daedalus_spark.domain import CapacityTable, ExecutorCapacity, Forecast, Observation
from daedalus_spark.untrusted import check_version, mapping

FORECASTS_KEPT = 120  # the forecasts of the last 120 ticks: enough to score one against what came
WORKLOAD_KEPT = 3000  # observed workload, one value per forecast resolution step
STATE_VERSION = 1
_BACKFILL_LINES, _BACKFILL_LINE_MAX = 50, 500  # a stored report of the start-up's backfill is read back this far
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
    def from_state(cls, raw: Any, where: str = "history") -> History:
        raw = mapping(raw, where)
        check_version(raw, where, STATE_VERSION)
        history = cls()
        for f in raw.get("forecasts", []):
            order = f.get("arima_order")
            history.forecasts.append(
                ForecastRecord(
                    time_s=float(f["time_s"]),
                    model=str(f["model"]),
                    arima_order=None if order is None else (int(order[0]), int(order[1]), int(order[2])),
                    refits=int(f["refits"]),
                    last_wape=None if f["last_wape"] is None else float(f["last_wape"]),
                    start_s=float(f["start_s"]),
                    step_s=float(f["step_s"]),
                    values_per_s=tuple(float(v) for v in f["values_per_s"]),
                    upper_per_s=tuple(float(v) for v in f.get("upper_per_s", ())),
                    planned_per_s=tuple(float(v) for v in f.get("planned_per_s", ())),
                )
            )
        history.workload.extend((float(t), float(v)) for t, v in raw.get("workload", []))
        table = raw.get("latest_table")
        history.latest_table = None if table is None else _table_from_json(table)
        history.backfill = tuple(str(line)[:_BACKFILL_LINE_MAX] for line in raw.get("backfill", [])[:_BACKFILL_LINES])
        return history


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


def _table_from_json(raw: dict[str, Any]) -> CapacityTable:
    executors = raw["executors"] if "executors" in raw else raw[_LEGACY_EXECUTORS_KEY]
    at_trigger = raw.get("current_at_trigger_per_s")  # absent in a store saved before it was kept
    return CapacityTable(
        current_scaleout=int(raw["current_scaleout"]),
        current_per_s=float(raw["current_per_s"]),
        per_scaleout_per_s=tuple(float(c) for c in raw["per_scaleout_per_s"]),
        observed_scaleouts=frozenset(int(n) for n in raw["observed_scaleouts"]),
        executors=tuple(_executor_capacity_from_json(w) for w in executors),
        catch_up_per_scaleout_per_s=tuple(float(c) for c in raw.get("catch_up_per_scaleout_per_s", ())),
        notes=tuple(str(n) for n in raw.get("notes", ())),
        current_at_trigger_per_s=None if at_trigger is None else float(at_trigger),
    )


def _executor_capacity_from_json(raw: dict[str, Any]) -> ExecutorCapacity:
    if _LEGACY_EXECUTOR_ID_KEY in raw and "executor_id" not in raw:
        raw = {("executor_id" if k == _LEGACY_EXECUTOR_ID_KEY else k): v for k, v in raw.items()}
    return ExecutorCapacity(**raw)
