"""Simulation tests: the held-out workload suite is deterministic, finite, non-negative and the right length."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.monitor.files import BUNDLED_TRACES_DIR, read_trace
from daedalus_spark.sim.suite import (
    SHAPES,
    SuiteError,
    WorkloadShape,
    get_shape,
    suite_workload,
    taylor_series,
    write_trace,
)

IDS = [s.name for s in SHAPES]


def test_at_least_six_distinct_shapes() -> None:
    assert len(SHAPES) >= 6 and len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_shape_is_deterministic_per_seed(shape: WorkloadShape) -> None:
    a, b, c = shape.generate(1), shape.generate(1), shape.generate(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_shape_is_finite_non_negative_right_length_and_peaks_at_peak(shape: WorkloadShape) -> None:
    y = shape.generate(3)
    assert y.shape == (shape.duration_s,)
    assert np.all(np.isfinite(y)) and float(y.min()) >= 0.0
    assert float(y.max()) == pytest.approx(shape.peak_per_s)
    assert shape.duration_s <= 6 * 3600
    # a meaningful range of scale-outs: the trough well below the peak
    assert float(np.percentile(y, 5)) < 0.8 * shape.peak_per_s


def test_real_series_loads_from_pmdarima() -> None:
    y = taylor_series(seconds_per_sample=2.0, samples=48)
    assert len(y) == 96 and np.all(np.isfinite(y))
    assert 15_000 < float(y.min()) < float(y.max()) < 45_000  # megawatts of a summer day in England and Wales


def test_unknown_shape_names_the_known_ones() -> None:
    with pytest.raises(SuiteError, match="fast_cycle"):
        get_shape("nope")


def test_generator_of_wrong_length_is_refused() -> None:
    bad = WorkloadShape("bad", "too short", 10, lambda rng, n: np.ones(n - 1))
    with pytest.raises(SuiteError, match="expected"):
        bad.generate()


def test_written_trace_reads_back_through_read_trace(tmp_path: object) -> None:
    from pathlib import Path

    y = get_shape("step_changes").generate(1)[:500]
    path = Path(str(tmp_path)) / "steps.csv"
    write_trace(str(path), y)
    np.testing.assert_allclose(read_trace(path), y, atol=1e-3)


@pytest.mark.parametrize(
    ("speedup", "blind_seconds"),
    [pytest.param(1, [(100, 160), (300, 301)], id="full-length"), pytest.param(4, [(25, 40), (75, 76)], id="4x")],
)
def test_monitor_gaps_become_a_blind_mask_at_any_speedup(speedup: int, blind_seconds: list[tuple[int, int]]) -> None:
    shape = WorkloadShape("g", "gaps", 400, lambda rng, n: np.ones(n), monitor_gaps_s=((100, 160), (300, 301)))
    blind = shape.monitor_blind(speedup)
    assert blind is not None and len(blind) == -(-400 // speedup)
    expected = np.zeros(len(blind), dtype=bool)
    for start, end in blind_seconds:
        expected[start:end] = True
    np.testing.assert_array_equal(blind, expected)
    assert WorkloadShape("n", "none", 10, lambda rng, n: np.ones(n)).monitor_blind() is None


def test_the_controller_skips_what_the_monitor_cannot_read_and_resumes() -> None:
    """gaps_in_data, 4x shorter: every tick whose window touches an outage is skipped as missing data and rescales
    nothing; the ticks after it decide again."""
    from daedalus_spark.config import Config
    from daedalus_spark.domain import Reason
    from daedalus_spark.sim.evaluate import compress_trace
    from daedalus_spark.sim.jobmodel import load_job_model
    from daedalus_spark.sim.policies import make_policy
    from daedalus_spark.sim.runner import make_setup, run_policy

    shape = get_shape("gaps_in_data")
    workload = compress_trace(shape.generate(1), 4)
    blind = shape.monitor_blind(4)
    assert blind is not None
    setup = make_setup(workload, load_job_model(None), Config(), 1, monitor_blind=blind[: len(workload)])
    policy = make_policy("daedalus", setup.config)
    run_policy(setup, policy)
    interval = round(setup.config.controller.loop_interval_s)
    touched = [d for d in policy.decisions if blind[max(0, int(d.time_s) - interval) : int(d.time_s)].any()]
    assert touched and all(d.reason is Reason.SKIP_MISSING_DATA and not d.rescale for d in touched)
    assert any(d.reason is not Reason.SKIP_MISSING_DATA for d in policy.decisions if not blind[int(d.time_s) - 1])


def test_suite_workload_reads_a_bundled_trace_by_its_stem_and_generates_a_shape_with_the_seed() -> None:
    stem = "ysb_advertising_6h_400K_max"
    assert np.array_equal(suite_workload(stem, seed=3), read_trace(BUNDLED_TRACES_DIR / f"{stem}.csv"))
    assert np.array_equal(suite_workload("flash_crowds", seed=3), get_shape("flash_crowds").generate(3))
    with pytest.raises(SuiteError, match="no_such_trace"):
        suite_workload("no_such_trace")
