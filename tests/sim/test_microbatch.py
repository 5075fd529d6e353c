"""Simulation tests: the micro-batch engine (sim/waves.py, sim/microbatch.py) against hand-computed cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daedalus_spark.analyze.batches import BatchFit
from daedalus_spark.analyze.partitions import topic_partition_hash
from daedalus_spark.config import Config, ControllerConfig
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.sim.daedalus import SimulatedJobMonitor
from daedalus_spark.sim.evaluate import evaluate
from daedalus_spark.sim.jobmodel import (
    DowntimeModel,
    InPlaceRescaleModel,
    JobModel,
    JobModelError,
    MicroBatchModel,
    StartupModel,
    load_job_model,
    profile_names,
)
from daedalus_spark.sim.metrics import passes
from daedalus_spark.sim.microbatch import MicroBatchJob
from daedalus_spark.sim.optimum import run_optimum, solve_optimum
from daedalus_spark.sim.policies import make_policy
from daedalus_spark.sim.runner import make_setup, run_policy
from daedalus_spark.sim.skew import build_simulated_capacity

# The largest scale-out these cases were written for (the config's default is the topic's partition count).
CONFIG = Config(controller=ControllerConfig(max_scaleout=12))

TOPIC = "t"


def _fixed(seconds: float) -> DowntimeModel:
    return DowntimeModel(low_s=seconds, high_s=seconds)


def _model(
    weights: list[float],
    *,
    rate: float = 100.0,
    rule: str = "any_core",
    batch_s: float = 0.0,
    task_s: float = 0.0,
    trigger_s: float = 1.0,
    cap: int | None = None,
    cores: int = 1,
    rescale: str = "in_place",
    registration_s: float = 5.0,
    stall_s: float = 3.0,
    leave_s: float = 2.0,
    **extra: Any,
) -> JobModel:

    return JobModel(
        engine="microbatch",
        rescale=rescale,
        microbatch=MicroBatchModel(
            trigger_s=trigger_s,
            batch_overhead_s=batch_s,
            task_overhead_s=task_s,
            max_offsets_per_trigger=cap,
            cores_per_executor=cores,
        ),
        in_place=InPlaceRescaleModel(registration=_fixed(registration_s), stall=_fixed(stall_s), leave=_fixed(leave_s)),
        executor_capacity_per_s=rate * cores,
        partitions=len(weights),
        partition_weights=tuple(weights),
        partition_assignment=rule,
        topic=TOPIC,
        utilization_noise_ratio=0.0,
        cpu_idle_ratio=0.1,
        **extra,
    )


def _job(workload: list[float] | np.ndarray, model: JobModel, *, scaleout: int = 1, slots: int = 4) -> MicroBatchJob:
    w = np.asarray(workload, dtype=float)
    cap = build_simulated_capacity(model, max_scaleout=slots, peak_per_s=float(w.max()))
    return MicroBatchJob(w, model, cap, initial_scaleout=scaleout, cpu_signal=True, rng=np.random.default_rng(0))


def _kafka_groups(partitions: int, executors: int) -> list[list[int]]:
    groups: list[list[int]] = [[] for _ in range(executors)]
    for p in range(partitions):
        groups[topic_partition_hash(TOPIC, p) % executors].append(p)
    return groups


# ---- one batch: fixed cost + task waves ----------------------------------------------------------------------------


def test_kafka_places_partitions_of_one_parity_together_on_two_executors() -> None:
    # 31 * (31 + p) + hash(topic) alternates parity with p: the hand-computed cases below rely on it
    groups = _kafka_groups(6, 2)
    assert sorted(map(sorted, groups)) == [[0, 2, 4], [1, 3, 5]]


SKEWED = [0.4, 0.2, 0.1, 0.1, 0.1, 0.1]


@pytest.mark.parametrize(
    ("weights", "rule", "executors", "cores", "records", "batch_s", "task_s", "expected_s"),
    [
        # 8 tasks of 100 records at 100/s (+0.1 s each) on 2 single-core executors: 4 waves of 1.1 s, + 0.3 s
        pytest.param([1] * 8, "any_core", 2, 1, 800, 0.3, 0.1, 0.3 + 4 * 1.1, id="8-equal-tasks-2x1-cores-4-waves"),
        pytest.param([1] * 8, "kafka", 2, 1, 800, 0.3, 0.1, 0.3 + 4 * 1.1, id="8-equal-tasks-kafka-4-each"),
        pytest.param([1] * 8, "any_core", 1, 2, 800, 0.3, 0.1, 0.3 + 4 * 1.1, id="8-equal-tasks-1x2-cores-4-waves"),
        pytest.param([1] * 8, "any_core", 4, 1, 800, 0.3, 0.1, 0.3 + 2 * 1.1, id="8-equal-tasks-4-cores-2-waves"),
        pytest.param([1] * 8, "any_core", 3, 1, 800, 0.0, 0.0, 3 * 1.0, id="8-on-3-cores-3-waves"),
        # 400, 200, 100 x 4 records: longest first to the first free core: {4, 1} {2, 1, 1, 1}... -> 5 s
        pytest.param(SKEWED, "any_core", 2, 1, 1000, 0.0, 0.0, 5.0, id="skewed-any-core-lpt"),
        # pinned by parity: partitions 0, 2, 4 (0.6 of the records) on one executor -> 6 s
        pytest.param(SKEWED, "kafka", 2, 1, 1000, 0.0, 0.0, 6.0, id="skewed-kafka-pinned"),
        pytest.param(SKEWED, "kafka", 1, 1, 1000, 0.2, 0.05, 0.2 + 6 * 0.05 + 10.0, id="one-executor-all-waves"),
        pytest.param([1, 0, 1], "any_core", 2, 1, 200, 0.0, 0.5, 0.5 + 1.0, id="no-task-for-a-partition-without-data"),
    ],
)
def test_batch_duration_is_fixed_cost_plus_waves(
    weights: list[float],
    rule: str,
    executors: int,
    cores: int,
    records: float,
    batch_s: float,
    task_s: float,
    expected_s: float,
) -> None:
    model = _model(weights, rule=rule, batch_s=batch_s, task_s=task_s, cores=cores)
    waves = build_simulated_capacity(model, max_scaleout=4, peak_per_s=1.0).waves
    assert waves is not None
    assert waves.duration_s(records, executors) == pytest.approx(expected_s)


def test_slow_executor_takes_longer_over_the_same_task() -> None:
    # two tasks of 100 records: the first to core 0 (1 s), the second to the slow core 1 at half speed (2 s)
    model = _model([1, 1], slow_executors=(1,), slow_executor_capacity_ratio=0.5)
    waves = build_simulated_capacity(model, max_scaleout=2, peak_per_s=1.0).waves
    assert waves is not None
    assert waves.duration_s(200, 2) == pytest.approx(2.0)


# ---- capacities ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "cap", "steady", "catchup"),
    [
        # (T - O - k o) r / S / T = (1 - 0.2 - 2 x 0.05) x 100 / 0.5 = 140/s; catch-up: 2 cores x 100/s
        pytest.param("kafka", None, 140.0, 200.0, id="kafka-formula"),
        pytest.param("any_core", None, 140.0, 200.0, id="any-core-bisection"),
        # a 100-record cap: 100/s steady; catch-up 100 / max(0.2 + 2 x (0.05 + 0.25), 1) = 100/s
        pytest.param("kafka", 100, 100.0, 100.0, id="capped"),
    ],
)
def test_steady_and_catch_up_capacity(rule: str, cap: int | None, steady: float, catchup: float) -> None:
    model = _model([1, 1, 1, 1], rule=rule, batch_s=0.2, task_s=0.05, cap=cap)
    capacity = build_simulated_capacity(model, max_scaleout=2, peak_per_s=1.0)
    assert capacity.steady_capacity_per_s[1] == pytest.approx(steady, rel=1e-6)
    assert capacity.catchup_capacity_per_s[1] == pytest.approx(catchup, rel=1e-6)
    assert capacity.capacity(2) == capacity.steady_capacity_per_s[1]


def test_core_rate_derived_from_the_peak_gives_the_reference_its_headroom() -> None:
    model = _model([1] * 6, rule="kafka", batch_s=0.2, task_s=0.02).model_copy(
        update={"executor_capacity_per_s": None, "reference_scaleout": 3, "capacity_headroom_ratio": 1.1}
    )
    capacity = build_simulated_capacity(model, max_scaleout=4, peak_per_s=1000.0)
    assert capacity.capacity(3) == pytest.approx(1100.0)


def test_fixed_costs_beyond_half_the_trigger_size_batches_of_twice_the_empty_batch() -> None:
    # 4 tasks on 2 cores at 100/s, O 0.8 s, o 0.2 s: the empty batch lasts 0.8 + 2 x 0.2 = 1.2 s > T / 2, so
    # L = 2.4 s; O + 2 (0.2 + R / 400) <= 2.4 -> R = 240 records, 100/s = (1 - 1.2 / 2.4) x 200/s, as the
    # controller's BatchFit.steady_per_s; the lag allowance is 2 L
    model = _model([1, 1, 1, 1], batch_s=0.8, task_s=0.2)
    capacity = build_simulated_capacity(model, max_scaleout=2, peak_per_s=1.0)
    assert capacity.steady_capacity_per_s[1] == pytest.approx(100.0, rel=1e-6)
    assert BatchFit(1.2, 1 / 200, 1.0).steady_per_s(1.0) == pytest.approx(100.0)
    assert capacity.batch_bound_per_scaleout_s is not None
    assert capacity.batch_bound_per_scaleout_s.tolist() == pytest.approx([max(1.0, 2 * (0.8 + 4 * 0.2)), 2.4])
    assert capacity.lag_allowance_s(np.array([2, 1])).tolist() == pytest.approx([4.8, 6.4])
    # below half the trigger L is the trigger: the steady capacity fits one trigger, the allowance two
    light = build_simulated_capacity(_model([1, 1, 1, 1], batch_s=0.2, task_s=0.05), max_scaleout=2, peak_per_s=1.0)
    assert light.batch_bound_per_scaleout_s is not None
    assert light.batch_bound_per_scaleout_s.tolist() == pytest.approx([1.0, 1.0])
    assert light.lag_allowance_s(np.array([1, 2])).tolist() == pytest.approx([2.0, 2.0])


@pytest.mark.parametrize(("fraction", "bounded"), [(0.98, True), (1.02, False)])
def test_back_to_back_batches_last_at_most_l_exactly_below_the_steady_capacity(fraction: float, bounded: bool) -> None:
    # the case above: batches never fit the 1-s trigger; D = 1.2 / (1 - a / 200) <= 2.4 iff a <= 100
    job = _job(np.full(300, 100.0 * fraction), _model([1, 1, 1, 1], batch_s=0.8, task_s=0.2), scaleout=2)
    job.advance(300)
    starts, ends, _ = job.batch_log()
    assert (ends[1:] - starts[1:] > 1.0).all()
    assert bool((ends[-20:] - starts[-20:] <= 2.4 + 1e-6).all()) == bounded
    if bounded:  # the lag stays within the allowance, 2 L of arrivals
        assert job.lag_allowance_s == pytest.approx(4.8)
        assert (job.backlog_records[-100:] <= 100.0 * fraction * job.lag_allowance_s).all()


def test_core_rate_derived_when_the_fixed_cost_exceeds_the_trigger() -> None:
    model = _model([1] * 24, rule="kafka", batch_s=0.9, task_s=0.1).model_copy(
        update={"executor_capacity_per_s": None, "reference_scaleout": 2}
    )
    capacity = build_simulated_capacity(model, max_scaleout=4, peak_per_s=1000.0)
    assert capacity.capacity(2) == pytest.approx(1100.0)


@pytest.mark.parametrize(("fraction", "keeps_up"), [(0.98, True), (1.02, False)])
def test_the_job_keeps_up_exactly_below_its_steady_capacity(fraction: float, keeps_up: bool) -> None:
    model = _model([1, 1, 1, 1], rule="kafka", batch_s=0.2, task_s=0.05)
    job = _job(np.full(120, 140.0 * fraction), model, scaleout=2)
    job.advance(120)
    starts, ends, records = job.batch_log()
    assert bool((ends - starts <= 1.0 + 1e-9).all()) == keeps_up
    if not keeps_up:
        assert records[-1] > records[1]  # batches grow once they overrun the trigger


# ---- batches over time ---------------------------------------------------------------------------------------------


def test_batches_take_what_arrived_and_start_on_the_ticks_when_keeping_up() -> None:
    # one partition, 100/s, 0.5 s per batch: steady capacity 50/s; at 40/s each batch takes one second's 40 records
    job = _job(np.full(10, 40.0), _model([1], batch_s=0.5))
    job.advance(10)
    starts, ends, records = job.batch_log()
    assert starts.tolist() == pytest.approx([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert (ends - starts).tolist() == pytest.approx([0.9] * 9)
    assert records.tolist() == pytest.approx([40] * 9)
    assert job.backlog_records[1:9].tolist() == pytest.approx([40] * 8)  # the next batch's input only
    assert job.processed_per_s[2] == pytest.approx(40.0)


def test_batches_run_back_to_back_and_grow_under_a_backlog() -> None:
    # 60/s against a steady capacity of 50/s: 60 -> [1, 2.1]; 66 arrived by 2.1 -> 1.16 s; 69.6 -> 1.196 s ...
    job = _job(np.full(40, 60.0), _model([1], batch_s=0.5))
    job.advance(40)
    starts, ends, records = job.batch_log()
    assert records[:3].tolist() == pytest.approx([60.0, 66.0, 69.6])
    assert ends[:3].tolist() == pytest.approx([2.1, 3.26, 4.456])
    assert starts[1:].tolist() == pytest.approx(ends[:-1].tolist())  # back to back
    assert (np.diff(records) > 0).all() and records[-1] == pytest.approx(75.0, rel=0.01)  # -> 0.5 x 60 / 0.4


def test_max_offsets_per_trigger_caps_every_batch() -> None:
    # 300 records at once, at most 40 per batch (0.9 s each): seven capped batches on the ticks, then the rest
    job = _job([300.0] + [0.0] * 19, _model([1], batch_s=0.5, cap=40))
    job.advance(20)
    starts, ends, records = job.batch_log()
    assert (ends - starts).tolist() == pytest.approx([0.9] * 7 + [0.7])
    assert records.tolist() == pytest.approx([40] * 7 + [20])
    assert starts.tolist() == pytest.approx([1, 2, 3, 4, 5, 6, 7, 8])
    assert job.backlog_records[0] == 300 and job.backlog_records[8] == 0


def test_no_batch_runs_without_data() -> None:
    job = _job([0.0, 0.0, 10.0, 0.0, 0.0, 0.0], _model([1], batch_s=0.1))
    job.advance(6)
    starts, _, records = job.batch_log()
    assert starts.tolist() == [3.0] and records.tolist() == [10.0]


def test_observation_reports_the_batches_of_its_window() -> None:
    job = _job(np.full(60, 40.0), _model([1], batch_s=0.5))
    job.advance(60)
    obs = job.observation(0)
    assert obs.batches is not None
    # batches at ticks 1..59 end at k + 0.9: 59 of them inside the window, 40 records and 0.9 s each
    assert obs.batches.batches == 59
    assert obs.batches.input_records == pytest.approx(59 * 40)
    assert obs.batches.duration_s == pytest.approx(59 * 0.9)


# ---- the query's start (JobModel.startup) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("startup", "first", "second"),
    [
        # no start-up: the first tick with data (1 s: 40 records), 0.5 s + 40 / 100/s
        pytest.param(None, (1.0, 40.0, 1.9), (2.0, 40.0, 2.9), id="none-first-tick-with-data"),
        # the query starts at 4.5 s: its first batch at tick 5 takes the 200 records that waited, 0.5 + 2 s; the
        # next starts at its end (back to back) with the 100 arrived meanwhile
        pytest.param(StartupModel(query_start=_fixed(4.5)), (5.0, 200.0, 7.5), (7.5, 100.0, 9.0), id="late-query"),
        # ... and the executor stalls 3 s in that batch (cold): its task starts 3 s into the task phase
        pytest.param(
            StartupModel(query_start=_fixed(4.5), first_batch_stall=_fixed(3.0)),
            (5.0, 200.0, 10.5),
            (10.5, 220.0, 13.2),
            id="late-query-cold-batch",
        ),
    ],
)
def test_the_query_starts_late_and_its_first_batch_cold(
    startup: StartupModel | None, first: tuple[float, float, float], second: tuple[float, float, float]
) -> None:
    job = _job(np.full(30, 40.0), _model([1], batch_s=0.5, startup=startup))
    job.advance(30)
    starts, ends, records = job.batch_log()
    assert (starts[0], records[0], ends[0]) == pytest.approx(first)
    assert (starts[1], records[1], ends[1]) == pytest.approx(second)
    # without a start-up the job reports from second 0, as the simulator always had it
    assert job.reporting_since_s() == pytest.approx(first[2] if startup is not None else 0.0)
    committed_by = int(first[2])  # nothing leaves the lag before the first commit
    assert job.backlog_records[:committed_by].tolist() == pytest.approx([40.0 * (t + 1) for t in range(committed_by)])


def test_the_cold_first_batch_keeps_the_executor_busy_without_records() -> None:
    startup = StartupModel(query_start=_fixed(4.5), first_batch_stall=_fixed(3.0))
    job = _job(np.full(30, 40.0), _model([1], batch_s=0.5, startup=startup))
    job.advance(30)
    assert job.busy_ratio[:5, 0].tolist() == [0.0] * 5  # the query has not started: idle
    assert job.busy_ratio[6:8, 0].tolist() == [1.0] * 2  # the stall, [5.5, 8.5): busy ...
    assert job.executor_throughput_per_s[6:8, 0].tolist() == [0.0] * 2  # ... and no records
    assert job.executor_throughput_per_s[9, 0] == pytest.approx(100.0)  # then its 200 records at 100/s


def test_the_monitor_sees_no_series_before_the_first_commit() -> None:
    startup = StartupModel(query_start=_fixed(4.5), first_batch_stall=_fixed(3.0))  # first commit at 10.5
    job = _job(np.full(30, 40.0), _model([1], batch_s=0.5, startup=startup))
    monitor = SimulatedJobMonitor(job)
    job.advance(10)
    with pytest.raises(MonitorError, match="no batch done") as raised:
        monitor.observe(start_s=0, end_s=10)
    assert raised.value.kind == "empty"
    job.advance(15)
    obs = monitor.observe(start_s=0, end_s=15)
    assert len(obs.workload_per_s) == 5  # from the second of the first commit on
    # the cold batch (200 records, committed at 10.5), then 220 (13.2) and 108 (14.78), back to back
    assert obs.batches is not None and (obs.batches.batches, obs.batches.input_records) == pytest.approx((3, 528))


def test_without_a_start_up_the_monitor_sees_every_second_from_the_first() -> None:
    # the first window must not lose the seconds before the first commit: a job model without `startup` (the
    # default and kubernetes profiles) gives the controller what it gave before the start-up existed
    job = _job(np.full(30, 40.0), _model([1], batch_s=0.5))
    monitor = SimulatedJobMonitor(job)
    job.advance(10)
    obs = monitor.observe(start_s=0, end_s=10)
    assert len(obs.workload_per_s) == 10
    assert job.observation(0).workload_per_s == obs.workload_per_s


def test_a_start_up_needs_the_micro_batch_engine() -> None:
    with pytest.raises(ValueError, match="startup needs engine: microbatch"):
        JobModel(startup=StartupModel())


# ---- in-place rescales ---------------------------------------------------------------------------------------------


def test_scale_out_registers_then_stalls_busy_without_records() -> None:
    # 2 partitions, 50/s; one executor runs both 25-record tasks in 0.5 s. At 10 s: 1 -> 2, registered at 15,
    # stalled 3 s in the batch of tick 15 (any_core: the other core takes both tasks), which commits at 18.
    job = _job(np.full(40, 50.0), _model([1, 1], registration_s=5.0, stall_s=3.0), scaleout=1)
    job.advance(10)
    assert job.request_scaleout(2)
    job.advance(40)
    r = job.rescales[0]
    assert (r.kind, r.registration_s, r.stall_s, r.downtime_s) == ("in_place", 5.0, 3.0, 0)
    assert job.busy_ratio[10:15, 1].tolist() == [0.0] * 5  # registering: idle
    assert job.cpu_ratio[10:15, 1].tolist() == pytest.approx([0.1] * 5)  # the idle floor
    assert job.busy_ratio[15:18, 1].tolist() == [1.0] * 3  # the stall: CPU busy ...
    assert job.cpu_ratio[15:18, 1].tolist() == pytest.approx([1.0] * 3)
    assert job.executor_throughput_per_s[15:18, 1].tolist() == [0.0] * 3  # ... and no records
    starts, ends, records = job.batch_log()
    i = int(np.flatnonzero(starts == 15.0)[0])
    assert ends[i] == pytest.approx(18.0)  # the stalled batch commits when the stall ends
    assert (starts[i + 1], records[i + 1], ends[i + 1]) == pytest.approx((18.0, 150.0, 18.75))  # both cores
    assert job.backlog_records[15:17].tolist() == pytest.approx([100.0, 150.0])  # lag builds meanwhile
    assert job.executor_throughput_per_s[18, 1] == pytest.approx(75.0)
    obs = job.observation(0)
    assert [e.executor_id for e in obs.executors] == ["executor-0", "executor-1"]
    assert len(obs.workload_per_s) == 40 - 15  # the new executor's samples start at its registration
    assert obs.scaleout == 2 and obs.uptime_s == 40


@pytest.mark.parametrize(("warmup_s", "warm_batch_s"), [(0.0, 0.25), (10.0, 0.5)], ids=["warm-at-once", "warming-10-s"])
def test_a_joining_executor_runs_at_the_warm_up_ratio_after_its_stall(warmup_s: float, warm_batch_s: float) -> None:
    # One partition per executor, 25 records each a second at 100/s per core: 0.25 s a task; warming at half speed,
    # 0.5 s. 1 -> 2 at 10, registered at 15, stalled until 18, warming until 28 (with a warm-up of 10 s).
    model = _model([1, 1], rule="kafka", registration_s=5.0, stall_s=3.0)
    model = model.model_copy(
        update={"in_place": model.in_place.model_copy(update={"warmup_s": warmup_s, "warmup_capacity_ratio": 0.5})}
    )
    job = _job(np.full(40, 50.0), model, scaleout=1)
    job.advance(10)
    job.request_scaleout(2)
    job.advance(40)
    starts, ends, _ = job.batch_log()
    durations = dict(zip(starts.tolist(), (ends - starts).tolist(), strict=True))
    assert [durations[float(t)] for t in range(24, 28)] == pytest.approx([warm_batch_s] * 4)  # caught up by 24
    assert [durations[float(t)] for t in range(29, 40)] == pytest.approx([0.25] * 11)  # warm from 28 on
    assert job.busy_ratio[24:28, 1].tolist() == pytest.approx([warm_batch_s] * 4)


def test_kafka_task_pinned_to_a_stalled_executor_waits_for_the_stall() -> None:
    # one partition per executor (parity); executor 1's task of the batch at 15 runs [18, 18.25]
    job = _job(np.full(30, 50.0), _model([1, 1], rule="kafka", registration_s=5.0, stall_s=3.0), scaleout=1)
    job.advance(10)
    job.request_scaleout(2)
    job.advance(30)
    starts, ends, _ = job.batch_log()
    assert ends[int(np.flatnonzero(starts == 15.0)[0])] == pytest.approx(18.25)
    assert job.executor_throughput_per_s[15:18, 1].tolist() == [0.0] * 3
    # second 18: its 25 records in [18, 18.25], then 75 of its 81.25 of the next batch (162.5 records arrived
    # since 15, half each, at 100/s from 18.25)
    assert job.executor_throughput_per_s[18, 1] == pytest.approx(25.0 + 75.0)


def test_executor_registering_is_not_listed_yet() -> None:
    job = _job(np.full(30, 50.0), _model([1, 1], registration_s=5.0), scaleout=1)
    job.advance(10)
    job.request_scaleout(2)
    job.advance(12)
    obs = job.observation(10)
    assert obs.scaleout == 1 and [e.executor_id for e in obs.executors] == ["executor-0"]


def test_scale_in_retries_the_killed_executors_task_after_the_leave_delay() -> None:
    # 200 records at once, two 100-record tasks at 10/s: [1, 11] on each core. Killed at 5: core 1's task is lost
    # and rerun after the 2-s leave delay on core 0, which is free at 11: [11, 21].
    job = _job([200.0] + [0.0] * 29, _model([1, 1], rate=10.0, leave_s=2.0), scaleout=2)
    job.advance(5)
    assert job.request_scaleout(1)
    job.advance(30)
    r = job.rescales[0]
    assert (r.kind, r.leave_s, r.retried_records) == ("in_place", 2.0, 100.0)
    starts, ends, records = job.batch_log()
    assert (starts.tolist(), ends.tolist(), records.tolist()) == ([1.0], [21.0], [200.0])
    assert job.executor_throughput_per_s[1:5, 1].tolist() == pytest.approx([10.0] * 4)
    assert job.executor_throughput_per_s[5:12, 1].tolist() == [0.0] * 7  # the lost work is not redone there
    assert job.executor_throughput_per_s[11:21, 0].tolist() == pytest.approx([10.0] * 10)  # the retry
    assert job.backlog_records[19] == 200 and job.backlog_records[20] == 0  # committed at 21


def test_scale_in_without_a_batch_on_the_killed_executor_costs_nothing() -> None:
    job = _job(np.full(20, 10.0), _model([1, 1], rate=100.0), scaleout=2)
    job.advance(5)
    job.request_scaleout(1)
    job.advance(20)
    assert job.rescales[0].retried_records == 0
    assert (job.backlog_records[5:] <= 10.0 + 1e-9).all()


def test_driver_restart_replays_the_uncommitted_batch() -> None:
    # the same 200-record batch, abandoned by a restart at 5 (downtime 3): replayed on one executor, [8, 28]
    model = _model([1, 1], rate=10.0, rescale="restart", downtime_scale_in=_fixed(3.0))
    job = _job([200.0] + [0.0] * 39, model, scaleout=2)
    job.advance(5)
    assert job.request_scaleout(1)
    assert not job.request_scaleout(2)  # ignored while restarting, as the continuous job
    job.advance(40)
    r = job.rescales[0]
    assert (r.kind, r.downtime_s, r.replay_records) == ("restart", 3, 200.0)
    assert job.processing_at[5:8].tolist() == [False] * 3
    starts, ends, records = job.batch_log()
    assert (starts.tolist(), ends.tolist(), records.tolist()) == ([8.0], [28.0], [200.0])
    assert job.executor_throughput_per_s[5:8].sum() == 0


# ---- the vectorized steady stretches against the batch-by-batch loop -----------------------------------------------


@pytest.mark.parametrize("rule", ["kafka", "any_core"])
def test_steady_stretches_equal_the_batch_loop(rule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = np.arange(1800)
    rng = np.random.default_rng(5)
    load = np.maximum(2500 + 1800 * np.sin(2 * np.pi * t / 600) + rng.normal(0, 200, len(t)), 0.0)
    model = _model([3, 1, 2, 1, 1, 2, 1, 1], rule=rule, rate=800.0, batch_s=0.2, task_s=0.02)
    setup = make_setup(load, model, CONFIG, seed=1)
    fast = run_policy(setup, make_policy("hpa:0.7", CONFIG))
    monkeypatch.setattr(MicroBatchJob, "_steady_stretch", lambda self, start, until: 0)
    slow = run_policy(setup, make_policy("hpa:0.7", CONFIG))
    assert len(fast.rescales) > 2  # the comparison covers rescales too
    np.testing.assert_array_equal(fast.scaleout, slow.scaleout)
    np.testing.assert_allclose(fast.lag_records, slow.lag_records, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(fast.processed_per_s, slow.processed_per_s, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(fast.latency_s, slow.latency_s, rtol=1e-9, atol=1e-9)


# ---- determinism, profiles, the optimum ----------------------------------------------------------------------------


def _sine() -> np.ndarray:
    t = np.arange(2 * 3600)
    return 20000 + 15000 * np.sin(2 * np.pi * t / 3600)


def test_same_seed_same_run_other_seed_other_draws() -> None:
    model = load_job_model("kubernetes")
    names = ["hpa:0.8", "static:12"]
    a = evaluate("sine", _sine(), names, job_model=model, config=CONFIG, seed=3)
    b = evaluate("sine", _sine(), names, job_model=model, config=CONFIG, seed=3)
    c = evaluate("sine", _sine(), names, job_model=model, config=CONFIG, seed=4)
    assert a.metrics == b.metrics
    for name in names:
        np.testing.assert_array_equal(a.runs[name].lag_records, b.runs[name].lag_records)
    draws = [
        [r.registration_s for r in ev.runs["hpa:0.8"].rescales if r.to_scaleout > r.from_scaleout] for ev in (a, c)
    ]
    assert draws[0] and draws[0] != draws[1]


def test_profiles_by_name() -> None:
    assert {"local", "kubernetes"} <= set(profile_names())
    local = load_job_model("local")
    assert (local.engine, local.rescale, local.partitions, local.partition_assignment) == (
        "microbatch",
        "in_place",
        8,
        "any_core",
    )
    with pytest.raises(JobModelError, match=r"no job-model profile of that name \(profiles: .*local"):
        load_job_model("nosuchprofile")


def test_in_place_needs_the_micro_batch_engine() -> None:
    with pytest.raises(ValueError, match="in_place needs engine: microbatch"):
        JobModel(rescale="in_place")


STEPS = np.concatenate([np.full(1800, 15000.0), np.full(1800, 38000.0), np.full(1800, 12000.0)])


def test_the_optimum_on_the_micro_batch_job_is_a_bound_on_every_static_that_passes() -> None:
    model = load_job_model("kubernetes")
    setup = make_setup(STEPS, model, CONFIG, seed=1)
    schedule = solve_optimum(setup)
    assert schedule.rescales >= 2
    run = run_optimum(setup, schedule)
    assert float(run.scaleout.sum()) == pytest.approx(schedule.executor_seconds)
    ctl = setup.config.controller
    for n in range(1, 13):
        static = run_policy(setup, make_policy(f"static:{n}", CONFIG))
        if passes(static, target_latency_s=ctl.target_latency_s, target_recovery_s=ctl.target_recovery_s):
            assert run.scaleout.sum() <= static.scaleout.sum()


# ---- properties on random traces -----------------------------------------------------------------------------------


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    levels=st.lists(st.floats(min_value=0.0, max_value=3000.0), min_size=3, max_size=8),
    seconds=st.integers(min_value=60, max_value=240),
    rule=st.sampled_from(["kafka", "any_core"]),
    rescale=st.sampled_from(["in_place", "restart"]),
    trigger=st.sampled_from([0.5, 1.0, 2.0]),
    cap=st.sampled_from([None, 1500]),
    seed=st.integers(0, 3),
)
def test_batches_never_overlap_and_every_record_is_accounted_for(
    levels: list[float], seconds: int, rule: str, rescale: str, trigger: float, cap: int | None, seed: int
) -> None:
    load = np.repeat(np.asarray(levels), seconds)
    model = _model(
        [3, 1, 2, 1, 1, 2],
        rule=rule,
        rate=600.0,
        batch_s=0.1,
        task_s=0.01,
        trigger_s=trigger,
        cap=cap,
        rescale=rescale,
        downtime_scale_out=_fixed(20.0),
        downtime_scale_in=_fixed(10.0),
    )
    config = Config.model_validate({"controller": {"max_scaleout": 6}})
    setup = make_setup(load, model, config, seed=seed)
    policy = make_policy("hpa:0.5", config)
    job = MicroBatchJob(
        setup.workload_per_s,
        model,
        setup.capacity,
        initial_scaleout=6,
        cpu_signal=True,
        rng=np.random.default_rng(seed),
    )
    assert policy.sync_interval_s
    while job.now_s < job.duration_s:
        job.advance(job.now_s + policy.sync_interval_s)
        target = policy.decide(job)
        if target is not None and job.now_s < job.duration_s:
            job.request_scaleout(target)
    job.finish()
    starts, ends, records = job.batch_log()
    total = float(load.sum())
    assert (starts[1:] >= ends[:-1] - 1e-9).all()  # one batch at a time
    assert (ends >= starts).all() and (records > 0).all()
    if cap is not None:
        assert (records <= cap + 1e-6).all()
    assert records.sum() <= total + 1e-6
    committed = float(records[ends <= job.duration_s].sum())
    assert job.lag_records() == pytest.approx(total - committed, abs=1e-6)
    assert (job.backlog_records >= 0).all() and np.isfinite(job.latency_s).all() and (job.latency_s >= 0).all()
    assert (job.busy_ratio >= 0).all() and (job.busy_ratio <= 1).all()
    assert (job.executor_throughput_per_s >= 0).all()
