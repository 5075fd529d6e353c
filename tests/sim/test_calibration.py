"""Simulation tests: the `local` profile against the local cluster's measurements
(benchmarks/results/spark_local.json, 2026-11-24; figures in docs/simulator.md), loose bounds (~30 %)."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.batches import BatchFit
from daedalus_spark.sim.jobmodel import load_job_model
from daedalus_spark.sim.microbatch import MicroBatchJob
from daedalus_spark.sim.skew import SimulatedCapacity, build_simulated_capacity

# section saturation, layout "small" (8,000-row batches back to back): batch_s_mean per executors
SMALL_BATCH_S = {1: 5.309, 2: 2.200, 4: 1.698}
# section saturation, layout "even" (1.2M-row batches): records_per_s per executors
SATURATED_PER_S = {1: 118_867.0, 2: 196_185.0, 3: 263_023.0, 4: 268_938.0}
# section batch_size_2: steady_max.highest_bounded_per_s, first_unbounded_per_s; ramp cpu_ratio_mean
BOUNDED_PER_S, UNBOUNDED_PER_S = 158_656.0, 240_376.0
RAMP_CPU = {3_000.0: 0.884, 158_656.0: 0.941, 240_376.0: 0.961}
# the live demo's runs (docs/results/2026-11-25-sim-vs-live.md; timeline.csv, wordcount.log): the query's first
# batch on 4 cold executors, when it started (s after the load began: the trace's arrivals it read), its lines and
# how long it lasted
FIRST_BATCHES = {
    "sim-vs-live 2026-11-24 23:06": (14.1, 114_472, 28.439),
    "live_compare daedalus": (13.0, 111_840, 29.442),
    "live_compare batch-ratio": (11.0, 92_352, 28.243),
    "live_compare static": (8.4, 69_059, 23.658),
}
QUERY_STARTS = [start for start, _, _ in FIRST_BATCHES.values()]


def _capacity(profile: str = "local") -> SimulatedCapacity:
    return build_simulated_capacity(load_job_model(profile), max_scaleout=4, peak_per_s=1.0)


@pytest.mark.parametrize("executors", sorted(SMALL_BATCH_S))
def test_small_batches_last_as_measured(executors: int) -> None:
    waves = _capacity().waves
    assert waves is not None
    assert waves.duration_s(8000, executors) == pytest.approx(SMALL_BATCH_S[executors], rel=0.3)


@pytest.mark.parametrize("executors", sorted(SATURATED_PER_S))
def test_saturated_throughput_with_large_batches(executors: int) -> None:
    waves = _capacity().waves
    assert waves is not None
    assert 1.2e6 / waves.duration_s(1.2e6, executors) == pytest.approx(SATURATED_PER_S[executors], rel=0.32)


def test_bounded_maximum_at_two_executors() -> None:
    capacity = _capacity()
    steady = float(capacity.steady_capacity_per_s[1])
    assert steady == pytest.approx(BOUNDED_PER_S, rel=0.3)
    assert steady < UNBOUNDED_PER_S
    # the controller's formula on the simulated batch line gives the same figure
    waves = capacity.waves
    assert waves is not None
    fixed = waves.duration_s(0.0, 2)
    per_record = (waves.duration_s(1e6, 2) - fixed) / 1e6
    assert BatchFit(fixed, per_record, 1e6).steady_per_s(1.0) == pytest.approx(steady, rel=1e-6)


@pytest.mark.parametrize("rate", sorted(RAMP_CPU))
def test_cpu_is_nearly_flat_at_any_load(rate: float) -> None:
    model = load_job_model("local")
    capacity = build_simulated_capacity(model, max_scaleout=4, peak_per_s=rate)
    job = MicroBatchJob(
        np.full(300, rate), model, capacity, initial_scaleout=2, cpu_signal=True, rng=np.random.default_rng(0)
    )
    job.advance(300)
    assert float(job.cpu_ratio[100:, :2].mean()) == pytest.approx(RAMP_CPU[rate], abs=0.06)


def test_the_query_starts_when_it_did_live() -> None:
    startup = load_job_model("local").startup
    assert startup is not None
    assert (startup.query_start.low_s, startup.query_start.high_s) == (min(QUERY_STARTS), max(QUERY_STARTS))


@pytest.mark.parametrize("seed", range(5))
def test_the_cold_first_batch_lasts_as_the_live_ones(seed: int) -> None:
    """On the demo's starting load (7,630 lines/s, 2 executors), the first batch starts within the live runs' query
    starts and lasts as long as their first batches did, its records aside."""
    model = load_job_model("local")
    capacity = build_simulated_capacity(model, max_scaleout=4, peak_per_s=13_500.0)
    job = MicroBatchJob(
        np.full(120, 7_630.0), model, capacity, initial_scaleout=2, cpu_signal=True, rng=np.random.default_rng(seed)
    )
    job.advance(120)
    starts, ends, records = job.batch_log()
    assert min(QUERY_STARTS) <= starts[0] <= max(QUERY_STARTS) + 1  # the first trigger tick after the start
    waves = capacity.waves
    assert waves is not None
    stall = ends[0] - starts[0] - waves.duration_s(float(records[0]), 2)
    measured = [d - waves.duration_s(r, 4) for _, r, d in FIRST_BATCHES.values()]
    assert min(measured) - 0.1 <= stall <= max(measured) + 0.1
    assert job.reporting_since_s() == ends[0]


# the demo's job (benchmarks/results/spark_local.json `kafka_0.25cpu_objective`, 2026-11-28): lines/s per executors,
# batches of 10,000 and of 25,000 lines per executor read back to back from 8 Kafka partitions
DEMO_SATURATED_PER_S = {
    (1, 10_000): 1_063.0,
    (2, 10_000): 2_127.0,
    (3, 10_000): 3_424.0,
    (4, 10_000): 4_729.0,
    (1, 25_000): 1_943.0,
    (2, 25_000): 3_424.0,
    (3, 25_000): 5_558.0,
    (4, 25_000): 7_367.0,
}


@pytest.mark.parametrize(("executors", "per_executor"), sorted(DEMO_SATURATED_PER_S))
def test_the_demo_profile_saturates_as_the_demo_job_did(executors: int, per_executor: int) -> None:
    waves = _capacity("demo").waves
    assert waves is not None
    lines = float(per_executor * executors)
    rate = lines / waves.duration_s(lines, executors)
    assert rate == pytest.approx(DEMO_SATURATED_PER_S[executors, per_executor], rel=0.10)


def test_the_demo_profile_keeps_the_clusters_figures_of_the_local_profile() -> None:
    """Only the job's batch line, its rescale times, placement, signal and the demo's workers differ, and the demo's
    query starts warm (it works off a warm-up batch before its load begins): the cluster's other measured times are
    the local ones."""
    demo, local = load_job_model("demo").model_dump(), load_job_model("local").model_dump()
    job_specific = {
        "microbatch",
        "executor_capacity_per_s",
        "partition_assignment",
        "utilization_signal",
        "in_place",
        "reference_scaleout",
        "startup",
    }
    assert demo["startup"] is None
    assert {k: v for k, v in demo.items() if k not in job_specific} == {
        k: v for k, v in local.items() if k not in job_specific
    }
    assert demo["microbatch"]["trigger_s"] == local["microbatch"]["trigger_s"]
