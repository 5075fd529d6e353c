"""Simulation tests: the job model against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.config import CapacityConfig, Config
from daedalus_spark.plan.schedule import lindley
from daedalus_spark.sim.job import SimulatedJob
from daedalus_spark.sim.jobmodel import DowntimeModel, JobModel
from daedalus_spark.sim.runner import make_setup
from daedalus_spark.sim.skew import build_simulated_capacity, executor_shares, partition_weights


def _job(workload: list[float], *, capacity: float = 100.0, scaleout: int = 1, **model: object) -> SimulatedJob:
    defaults: dict[str, object] = {
        "executor_capacity_per_s": capacity,
        "partitions": 4,
        "zipf_exponent": 0.0,
        "keys": 4000,
        "utilization_noise_ratio": 0.0,
        "checkpoint_interval_s": 0,
    }
    jm = JobModel(**{**defaults, **model})
    cap = build_simulated_capacity(jm, max_scaleout=4, peak_per_s=max(workload))
    return SimulatedJob(
        np.asarray(workload, float), jm, cap, initial_scaleout=scaleout, cpu_signal=True, rng=np.random.default_rng(0)
    )


def test_lindley_matches_hand_computed_backlog() -> None:
    # capacity 10/s: 15 -> 5 left, 15 -> 10, 0 -> 0, 30 -> 20 (starting from 2 -> 7 first)
    backlog = lindley(2.0, np.array([15.0, 15.0, 0.0, 30.0]), np.full(4, 10.0))
    assert backlog.tolist() == [7.0, 12.0, 2.0, 22.0]


def test_backlog_drains_at_spare_capacity() -> None:
    job = _job([150, 150, 50, 50, 50, 50], capacity=100.0)
    job.advance(6)
    # backlog: 50, 100, 50, 0, 0, 0; processed up to capacity
    assert job.backlog_records.tolist() == pytest.approx([50, 100, 50, 0, 0, 0])
    assert job.processed_per_s.tolist() == pytest.approx([100, 100, 100, 100, 50, 50])


def test_downtime_stops_processing_and_accumulates_arrivals() -> None:
    fixed = DowntimeModel(low_s=3, high_s=3)
    job = _job([10.0] * 10, capacity=100.0, downtime_scale_out=fixed)
    job.advance(2)
    assert job.request_scaleout(2)
    assert not job.processing and job.scaleout == 2
    job.advance(10)
    assert job.processed_per_s[2:5].tolist() == [0, 0, 0]
    assert job.backlog_records[2:5].tolist() == [10, 20, 30]
    assert job.processed_per_s[5] == 40  # the 30 waiting plus this second's 10
    assert job.backlog_records[5] == 0
    assert job.uptime_s() == 5  # restarted at second 5
    assert job.rescales[0].downtime_s == 3


def test_replay_since_last_checkpoint_after_restart() -> None:
    fixed = DowntimeModel(low_s=2, high_s=2)
    job = _job([10.0] * 20, capacity=100.0, checkpoint_interval_s=5, downtime_scale_in=fixed, scaleout=2)
    job.advance(8)
    job.request_scaleout(1)
    age = job.rescales[0].checkpoint_age_s
    assert 0 <= age <= 5
    replay = 10.0 * age  # the seconds processed since the last checkpoint are processed again
    assert job.rescales[0].replay_records == pytest.approx(replay)
    job.advance(10)  # replayed records + 20 arrived during the downtime
    assert job.backlog_records[8:10] == pytest.approx([replay + 10, replay + 20])
    job.advance(11)
    assert job.processed_per_s[10] == pytest.approx(replay + 30)


def test_checkpoint_age_covers_the_interval() -> None:
    ages = set()
    for seed in range(40):
        job = _job([10.0] * 200, checkpoint_interval_s=4, scaleout=2)
        job._rng = np.random.default_rng(seed)
        job.advance(100)
        job.request_scaleout(1)
        ages.add(job.rescales[0].checkpoint_age_s)
    assert ages == {0, 1, 2, 3, 4}


def test_rescale_ignored_while_restarting() -> None:
    job = _job([10.0] * 100)
    job.advance(1)
    assert job.request_scaleout(2)
    assert not job.request_scaleout(3)
    assert len(job.rescales) == 1


def test_utilization_is_throughput_over_capacity_with_idle_floor() -> None:
    job = _job([50.0] * 3, capacity=100.0, cpu_idle_ratio=0.1)
    job.advance(3)
    assert job.busy_ratio[:, 0] == pytest.approx([0.5] * 3)
    assert job.cpu_ratio[:, 0] == pytest.approx([0.55] * 3)


@pytest.mark.parametrize("rule", ["kafka", "any_core"])
@pytest.mark.parametrize("scaleout", [1, 2, 3, 5, 7, 12, 30])
def test_skew_shares_sum_to_one(scaleout: int, rule: str) -> None:
    weights = partition_weights(keys=500, partitions=24, zipf_exponent=1.0, seed=3)
    assert weights.sum() == pytest.approx(1.0)
    shares = executor_shares(JobModel(partitions=24, partition_assignment=rule), weights, scaleout)
    assert shares.sum() == pytest.approx(1.0)
    assert len(shares) == scaleout
    if scaleout > 24:
        assert (shares == 0).sum() == scaleout - 24  # more executors than partitions: the extra ones idle


def test_skew_makes_the_most_loaded_executor_the_bottleneck() -> None:
    jm = JobModel(executor_capacity_per_s=100.0, zipf_exponent=1.0, partitions=12)
    cap = build_simulated_capacity(jm, max_scaleout=12, peak_per_s=1.0)
    shares = cap.shares(12)
    assert cap.capacity(12) == pytest.approx(100.0 / shares.max())
    assert cap.capacity(12) < 1200.0


def test_slow_executor_lowers_job_capacity() -> None:
    jm = JobModel(
        executor_capacity_per_s=100.0,
        zipf_exponent=0.0,
        keys=12000,
        partitions=4,
        slow_executors=(1,),
        slow_executor_capacity_ratio=0.5,
    )
    cap = build_simulated_capacity(jm, max_scaleout=4, peak_per_s=1.0)
    assert cap.capacity(4) == pytest.approx(0.5 * 100 / cap.shares(4)[1])


def test_default_capacity_carries_the_peak_at_the_reference_scaleout() -> None:
    setup = make_setup(np.array([1000.0, 40000.0]), JobModel(), Config(), seed=0)
    assert setup.capacity.capacity(12) == pytest.approx(40000 * 1.1)
    assert setup.capacity.capacity(11) < 40000


def test_observation_matches_the_monitor_contract() -> None:
    job = _job([10.0] * 120, scaleout=2)
    job.advance(60)
    obs = job.observation(0)
    assert obs.step_s == 1.0 and obs.time_s == 60 and obs.scaleout == 2 and len(obs.executors) == 2
    assert len(obs.workload_per_s) == 60 and all(len(w.throughput_per_s) == 60 for w in obs.executors)
    assert sum(w.throughput_per_s[-1] for w in obs.executors) == pytest.approx(10.0)
    assert obs.uptime_s == 60 and obs.consumer_lag_records == 0


@pytest.mark.parametrize("rule", ["kafka", "any_core"])
def test_controller_extrapolates_the_simulated_jobs_skewed_capacities(rule: str) -> None:
    """Observed at 12 executors with the partitions' rates, the capacity model (margin 0) predicts every smaller
    scale-out of a skewed job as the job has it: the same placement rule on both sides. The model's capacity is
    non-decreasing in the scale-out (a lopsided Kafka placement at n counts as much as the best below it), so it
    matches the job's capacities' running maximum."""
    jm = JobModel(
        executor_capacity_per_s=1000.0,
        partitions=24,
        zipf_exponent=0.8,
        utilization_noise_ratio=0.0,
        cpu_idle_ratio=0.0,
        partition_assignment=rule,
    )
    cap = build_simulated_capacity(jm, max_scaleout=12, peak_per_s=1.0)
    load = np.linspace(0.2, 0.9, 300) * cap.capacity(12)  # a ramp: the regressions see a range of utilization
    job = SimulatedJob(load, jm, cap, initial_scaleout=12, cpu_signal=False, rng=np.random.default_rng(0))
    job.advance(300)
    obs = job.observation(0)
    model = CapacityModel(CapacityConfig(partition_assignment=rule, unobserved_margin_ratio=0.0))
    model.learn(obs)
    table = model.table(obs, 12)
    assert table is not None
    predicted = [table.at(n) for n in range(1, 13)]
    expected = np.maximum.accumulate([cap.capacity(n) for n in range(1, 13)])
    assert predicted == pytest.approx(expected.tolist(), rel=1e-3)
