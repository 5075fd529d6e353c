"""Unit: benchmarks/planning_gap.py — what its informed controllers are told: the trace's own load per forecast step,
and the simulated job's capacity at the plan's latency objective."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from planning_gap import at_latency_per_s, known_future

from daedalus_spark.domain import Forecast
from daedalus_spark.sim.jobmodel import load_job_model
from daedalus_spark.sim.skew import build_simulated_capacity


@dataclass
class Forecaster:
    """Forecasts 3 steps of 2 s from second 10, flat at 1/s with a wide band."""

    def predict(self, now_s: float, horizon_s: float | None = None) -> Forecast:
        return Forecast(10.0, 2.0, (1.0, 1.0, 1.0), "arima", (9.0, 9.0, 9.0))


def test_the_known_future_is_the_traces_mean_load_per_step_with_no_band() -> None:
    workload = np.arange(20, dtype=float)  # second i carries i records
    forecaster = Forecaster()
    known_future(forecaster, workload)  # type: ignore[arg-type]
    forecast = forecaster.predict(8.0)
    assert (forecast.start_s, forecast.step_s) == (10.0, 2.0)
    assert forecast.values_per_s == (10.5, 12.5, 14.5)
    assert forecast.upper_per_s == ()


def test_past_the_traces_end_the_known_future_holds_its_last_second() -> None:
    forecaster = Forecaster()
    known_future(forecaster, np.arange(13, dtype=float))  # type: ignore[arg-type]
    assert forecaster.predict(8.0).values_per_s == (10.5, 12.0, 12.0)


@pytest.fixture(scope="module")
def capacity():  # type: ignore[no-untyped-def]
    return build_simulated_capacity(load_job_model("kubernetes"), max_scaleout=6, peak_per_s=20_000.0)


def test_at_an_objective_within_the_batch_bound_the_capacity_is_the_steady_one(capacity) -> None:  # type: ignore[no-untyped-def]
    assert at_latency_per_s(capacity, 0.0) == pytest.approx(tuple(capacity.steady_capacity_per_s))


def test_a_longer_objective_carries_more_up_to_the_catch_up_rate(capacity) -> None:  # type: ignore[no-untyped-def]
    short, long = np.array(at_latency_per_s(capacity, 15.0)), np.array(at_latency_per_s(capacity, 120.0))
    assert (short >= capacity.steady_capacity_per_s - 1e-9).all()
    assert (long >= short).all() and (long > short).any()
    assert (long <= capacity.catchup_capacity_per_s * 1.001).all()
