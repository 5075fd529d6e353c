"""Unit: the demo's load needs autoscaling — deploy/demo.yaml's trace scale against the calibration it cites, and
the cited figures against the measured ones in benchmarks/results/spark_local.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from capacity_experiments.on_kafka import at_objective

from daedalus_spark.config import DemoConfig, load_config
from daedalus_spark.demo.live import DEMO_CONFIG, TRACE
from daedalus_spark.demo.sizing import LoadExtremes, load_extremes, sizing_problems

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "spark_local.json"
COMPRESSION = 10800 / 480  # one 3-hour trace cycle in the 8-minute load cycle


def shipped() -> tuple[DemoConfig, int]:
    config = load_config(DEMO_CONFIG)
    return config.demo, config.controller.max_scaleout


def extremes(demo: DemoConfig) -> LoadExtremes:
    return load_extremes(
        TRACE, start_s=demo.trace_start_s, seconds=10800, scale=demo.trace_scale, compression=10800 / demo.load_cycle_s
    )


def test_the_cited_capacities_are_the_measured_ones_read_at_the_objective() -> None:
    config = load_config(DEMO_CONFIG)
    demo = config.demo
    section = json.loads(RESULTS.read_text())[f"kafka_{demo.cpus_per_executor:g}cpu_objective"]
    lines = at_objective(section["runs"], config.capacity.trigger_interval_s, config.controller.target_latency_s)
    measured = {
        row["executors"]: row["at_objective_per_s"]
        for row in lines
        if (row["pipeline"], row["record_cost_rounds"]) == ("wordcount", demo.record_cost_rounds)
    }
    assert demo.capacity_lines_per_s == [measured[n] for n in range(1, config.controller.max_scaleout + 1)]


def test_the_shipped_scale_needs_one_executor_at_the_trough_and_the_maximum_at_the_peak() -> None:
    demo, max_scaleout = shipped()
    assert sizing_problems(extremes(demo), demo.capacity_in_demo_per_s, max_scaleout) == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"trace_scale": 2.1}, "trough"),
        ({"trace_scale": 0.75}, "not above"),
        ({"trace_scale": 0.98}, "below 0.75"),
        ({"capacity_at_1": 0.45}, "trough"),
        ({"capacity_at_max": 1.02}, "below 0.75"),
        ({"capacity_at_max_less_1": 1.3}, "not above"),
    ],
    ids=["scale-2.1x", "scale-0.75x", "scale-0.98x", "capacity-1-0.45x", "capacity-max-1.02x", "capacity-2-1.3x"],
)
def test_a_scale_or_figure_changed_alone_breaks_the_sizing(change: dict[str, float], named: str) -> None:
    demo, max_scaleout = shipped()
    rates = list(demo.capacity_in_demo_per_s)
    scale = demo.trace_scale * change.get("trace_scale", 1.0)
    rates[0] *= change.get("capacity_at_1", 1.0)
    rates[-1] *= change.get("capacity_at_max", 1.0)
    rates[-2] *= change.get("capacity_at_max_less_1", 1.0)
    changed = demo.model_copy(update={"trace_scale": scale})
    problems = sizing_problems(extremes(changed), rates, max_scaleout)
    assert any(named in p for p in problems), problems


@pytest.mark.parametrize(
    ("trough", "peak", "rates", "problems"),
    [
        (500.0, 4000.0, [1000.0, 2000.0, 3000.0, 4000.0], 0),
        (501.0, 4000.0, [1000.0, 2000.0, 3000.0, 4000.0], 1),
        (500.0, 2999.0, [1000.0, 2000.0, 3000.0, 4000.0], 2),
        (500.0, 3000.0, [1000.0, 2000.0, 3000.0, 4000.0], 1),
        (500.0, 3001.0, [1000.0, 2000.0, 3000.0, 4000.0], 0),
        (500.0, 4000.0, [1000.0, 2000.0, 3000.0], 1),
    ],
    ids=["at-every-bound", "trough-over-half", "peak-under-both", "peak-at-max-less-1", "peak-just-above", "3-figures"],
)
def test_sizing_rules_at_their_bounds(trough: float, peak: float, rates: list[float], problems: int) -> None:
    load = LoadExtremes(trough, peak, 300.0, 100.0)
    assert len(sizing_problems(load, rates, 4)) == problems


def test_the_load_extremes_are_the_traces_scaled_and_placed_in_the_cycle() -> None:
    load = load_extremes(TRACE, start_s=0, seconds=10800, scale=0.01, compression=COMPRESSION)
    assert load.peak_per_s == pytest.approx(40_000 * 0.01 * COMPRESSION)
    assert load.trough_per_s == pytest.approx(5_000 * 0.01 * COMPRESSION, rel=0.01)
    assert load.peak_at_s == pytest.approx(2700 / COMPRESSION)  # the sine's top at a quarter of its 3 hours
    assert load.trough_at_s == pytest.approx(8100 / COMPRESSION, abs=1.0)
