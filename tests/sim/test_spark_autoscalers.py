"""Simulation tests: Spark's own autoscalers (spark-da, batch-ratio) against hand-computed cases and short runs."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from daedalus_spark.config import Config, ControllerConfig
from daedalus_spark.plan.batchratio import BatchRatioSettings, average_ratio, batch_ratio_target
from daedalus_spark.sim.batchratio import BatchRatioPolicy
from daedalus_spark.sim.jobmodel import JobModel, load_job_model
from daedalus_spark.sim.microbatch import MicroBatchJob
from daedalus_spark.sim.policies import PolicyNameError, make_policy
from daedalus_spark.sim.runner import make_setup, new_job, run_policy
from daedalus_spark.sim.sparkda import Allocation, DynamicAllocationSettings, SparkDaPolicy, removable

# The largest scale-out these cases were written for (the config's default is the topic's partition count).
CONFIG = Config(controller=ControllerConfig(max_scaleout=12))

Queue = Callable[[float], tuple[int, int, float | None]]  # t -> pending, running, submission of the backlog


def _backlog(pending: int, running: int = 0, *, until_s: float = math.inf, again_s: float = math.inf) -> Queue:
    """`pending` tasks waiting from t=0 until `until_s`, and again from `again_s` (a new stage)."""

    def queue(t: float) -> tuple[int, int, float | None]:
        if t < until_s:
            return pending, running, 0.0
        if t >= again_s:
            return pending, running, again_s
        return 0, running, None

    return queue


def _added(alloc: Allocation, queue: Queue, seconds: float) -> list[int]:
    """Polls every 0.1 s with every requested executor registered at once; the executors added per round."""
    added = []
    for k in range(1, round(seconds * 10) + 1):
        t = k / 10
        pending, running, submit = queue(t)
        before = alloc.target
        alloc.poll(t, pending=pending, running=running, registered=alloc.target, submit_s=submit)
        if alloc.target != before:
            added.append(alloc.target - before)
    return added


@pytest.mark.parametrize(
    ("settings", "tasks_per_executor", "queue", "seconds", "expected"),
    [
        # 100 tasks waiting: +1 at 1 s, +2 at 2 s, +4 at 3 s, +8 at 4 s
        pytest.param(
            DynamicAllocationSettings(max_executors=50), 1, _backlog(100), 4.0, [1, 2, 4, 8], id="ramp-doubles"
        ),
        pytest.param(
            DynamicAllocationSettings(max_executors=50), 1, _backlog(100), 0.9, [], id="before-backlog-timeout"
        ),
        # 4 pending + 2 running need 6 executors: 2 -> 3 -> 5 -> 6 (the last round adds 1, not 4)
        pytest.param(DynamicAllocationSettings(max_executors=50), 1, _backlog(4, 2), 5.0, [1, 2, 1], id="max-needed"),
        pytest.param(DynamicAllocationSettings(max_executors=6), 1, _backlog(100), 5.0, [1, 2, 1], id="max-executors"),
        # 12 tasks x 0.5 / 1 = 6; 24 tasks on 2 cores per executor = 12
        pytest.param(
            DynamicAllocationSettings(max_executors=50, allocation_ratio=0.5),
            1,
            _backlog(12),
            5.0,
            [1, 2, 1],
            id="allocation-ratio",
        ),
        pytest.param(DynamicAllocationSettings(max_executors=50), 2, _backlog(24), 5.0, [1, 2, 4, 3], id="two-cores"),
        # sustained timeout 3 s: +1 at 1 s, +2 at 4 s
        pytest.param(
            DynamicAllocationSettings(max_executors=50, sustained_backlog_timeout_s=3.0),
            1,
            _backlog(100),
            6.0,
            [1, 2],
            id="sustained-timeout",
        ),
        # the queue drains at 2.5 s (the ramp resets); a new stage at 3 s backlogs again: +1 at 4 s, +2 at 5 s
        pytest.param(
            DynamicAllocationSettings(max_executors=50),
            1,
            _backlog(100, 10, until_s=2.5, again_s=3.0),
            5.0,
            [1, 2, 1, 2],
            id="drained-queue-resets-ramp",
        ),
    ],
)
def test_dynamic_allocation_ramp(
    settings: DynamicAllocationSettings, tasks_per_executor: int, queue: Queue, seconds: float, expected: list[int]
) -> None:
    alloc = Allocation(settings, target=2, tasks_per_executor=tasks_per_executor)
    assert _added(alloc, queue, seconds) == expected


def test_dynamic_allocation_lowers_the_target_to_what_is_needed_and_keeps_the_minimum() -> None:
    alloc = Allocation(DynamicAllocationSettings(min_executors=2, max_executors=50), target=9)
    assert alloc.poll(0.1, pending=0, running=5, registered=9, submit_s=None) == 5
    assert alloc.poll(0.2, pending=0, running=0, registered=9, submit_s=None) == 2  # between batches: the minimum


def test_a_round_from_below_the_registered_count_resets_the_ramp() -> None:
    alloc = Allocation(DynamicAllocationSettings(max_executors=50), target=2)
    alloc.poll(1.0, pending=100, running=0, registered=6, submit_s=0.0)
    assert (alloc.target, alloc.to_add) == (7, 1)  # max(2, 6) + 1: added 5, not 1


@pytest.mark.parametrize(
    ("idle_for_s", "holds", "settings", "expected"),
    [
        pytest.param(59.0, False, DynamicAllocationSettings(), 0, id="idle-59s-kept"),
        pytest.param(60.0, False, DynamicAllocationSettings(), 1, id="idle-60s-removed"),
        pytest.param(1e6, True, DynamicAllocationSettings(), 0, id="shuffle-tracking-holds-forever"),
        pytest.param(60.0, True, DynamicAllocationSettings(shuffle_tracking=False), 1, id="no-tracking-no-hold"),
        pytest.param(
            100.0, True, DynamicAllocationSettings(shuffle_tracking_timeout_s=120.0), 0, id="shuffle-timeout-not-yet"
        ),
        pytest.param(
            120.0, True, DynamicAllocationSettings(shuffle_tracking_timeout_s=120.0), 1, id="shuffle-timeout-over"
        ),
    ],
)
def test_idle_timeout_and_shuffle_tracking(
    idle_for_s: float, holds: bool, settings: DynamicAllocationSettings, expected: int
) -> None:
    idle = np.array([np.nan, np.nan, 1000.0 - idle_for_s])  # two executors running tasks, one idle
    n = removable(idle_since_s=idle, holds_shuffle=np.array([True, True, holds]), now_s=1000.0, floor=1, s=settings)
    assert n == expected


def test_removals_keep_the_floor() -> None:
    idle = np.full(4, 0.0)  # all four idle for 1000 s
    s = DynamicAllocationSettings(shuffle_tracking=False)
    assert removable(idle_since_s=idle, holds_shuffle=np.zeros(4, bool), now_s=1000.0, floor=3, s=s) == 1
    assert removable(idle_since_s=idle, holds_shuffle=np.zeros(4, bool), now_s=1000.0, floor=4, s=s) == 0


@pytest.mark.parametrize(
    ("current", "ratio", "expected"),
    [
        pytest.param(4, 0.9, 5, id="up-at-0.9-adds-one"),
        pytest.param(4, 1.5, 6, id="up-round-half-up"),  # Scala math.round(1.5) = 2 (Python's round gives 2 too)
        pytest.param(4, 2.5, 7, id="up-2.5-adds-three"),  # Scala 3, Python's banker's round 2
        pytest.param(11, 3.0, 12, id="up-bounded-by-max"),
        pytest.param(4, 0.5, 4, id="between-ratios-keeps"),
        pytest.param(4, 0.3, 3, id="down-at-0.3-removes-one"),
        pytest.param(2, 0.1, 2, id="down-bounded-by-min"),
        pytest.param(4, None, 4, id="no-batch-keeps"),
    ],
)
def test_batch_ratio_rule(current: int, ratio: float | None, expected: int) -> None:
    s = BatchRatioSettings(min_executors=2, max_executors=12)
    assert batch_ratio_target(current=current, ratio=ratio, s=s) == expected


def test_batch_ratio_averages_whole_milliseconds() -> None:
    assert average_ratio(np.array([0.3004, 0.3004, 0.3003]), 1.0) == pytest.approx(0.3)  # (300+300+300) // 3 ms
    assert average_ratio(np.array([1.0, 2.0]), 2.0) == pytest.approx(0.75)
    assert average_ratio(np.array([]), 1.0) is None


def test_settings_by_name() -> None:
    config = CONFIG
    p = make_policy("spark-da:executor_idle_timeout_s=30:shuffle_tracking=off:max_executors=8", config)
    assert isinstance(p, SparkDaPolicy)
    assert (p.settings.executor_idle_timeout_s, p.settings.shuffle_tracking, p.settings.max_executors) == (30, False, 8)
    assert p.settings.min_executors == config.controller.min_scaleout
    p = make_policy("spark-da:scheduler_backlog_timeout_s=5:shuffle_tracking_timeout_s=inf", config)
    assert isinstance(p, SparkDaPolicy)
    assert p.settings.sustained_backlog_timeout_s == 5  # Spark: defaults to the first timeout
    b = make_policy("batch-ratio:scaling_interval_s=30:scaling_down_ratio=0.2", config)
    assert isinstance(b, BatchRatioPolicy)
    assert (b.sync_interval_s, b.settings.scaling_down_ratio, b.settings.max_executors) == (30, 0.2, 12)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("spark-da:idle=3", "not KEY=VALUE", id="unknown-key"),
        pytest.param("spark-da:60", "not KEY=VALUE", id="bare-value"),
        pytest.param("spark-da:allocation_ratio=1.5", "outside", id="ratio-above-one"),
        pytest.param("spark-da:executor_idle_timeout_s=0", "outside", id="zero-timeout"),
        pytest.param("spark-da:max_executors=99", "outside", id="above-controller-max"),
        pytest.param("spark-da:min_executors=5:max_executors=3", "exceeds", id="min-above-max"),
        pytest.param("spark-da:shuffle_tracking=maybe", "true or false", id="bad-boolean"),
        pytest.param("batch-ratio:scaling_interval_s=1.5", "whole number", id="fractional-interval"),
        pytest.param("batch-ratio:scaling_up_ratio=0.3", "must exceed", id="up-not-above-down"),
        pytest.param("batch-ratio:max_executors=3:max_executors=4", "twice", id="twice"),
    ],
)
def test_bad_settings_are_refused(name: str, message: str) -> None:
    with pytest.raises(PolicyNameError, match=message):
        make_policy(name, CONFIG)


def _kubernetes(**microbatch: float) -> JobModel:
    jm = load_job_model("kubernetes")
    return jm.model_copy(update={"microbatch": jm.microbatch.model_copy(update=microbatch)}) if microbatch else jm


def test_task_phases_show_the_waves() -> None:
    setup = make_setup(np.full(30, 20000.0), load_job_model("kubernetes"), CONFIG, 1, sized_for_per_s=35000.0)
    job = new_job(setup, initial_scaleout=2, rng=np.random.default_rng(1))
    assert isinstance(job, MicroBatchJob)
    job.advance(10)
    phases = job.task_phases(5.0, 6.0)
    assert phases
    p = phases[0]
    assert len(p.start_s) == 24  # one task per partition
    assert set(p.slot.tolist()) == {0, 1}
    waiting_at_submit = int(np.sum(p.start_s > p.submit_s + 1e-9))
    assert waiting_at_submit == 22  # two cores take two tasks; the others wait for their executor's core
    assert np.all(p.end_s > p.start_s)


def test_spark_da_scales_out_under_a_backlog_and_never_in_on_a_busy_job() -> None:
    workload = np.concatenate([np.full(600, 8000.0), np.full(1200, 30000.0), np.full(1200, 8000.0)])
    jm = load_job_model("kubernetes").model_copy(update={"initial_scaleout": 2})
    setup = make_setup(workload, jm, CONFIG, 1, sized_for_per_s=35000.0)
    result = run_policy(setup, make_policy("spark-da", CONFIG))
    assert result.scaleout[0] == 2
    assert result.scaleout.max() >= 10  # the ramp reaches what 24 tasks need (capped by max 12)
    assert np.all(np.diff(result.scaleout) >= 0)  # every executor runs a task each trigger: none is ever idle 60 s


def test_spark_da_removes_executors_that_get_no_tasks() -> None:
    # 24 partitions on 12 executors, max_executors 12: with 4 partitions only 4 hash slots get tasks
    jm = load_job_model("kubernetes").model_copy(update={"partitions": 4, "initial_scaleout": 12})
    setup = make_setup(np.full(300, 2000.0), jm, CONFIG, 1, sized_for_per_s=35000.0)
    result = run_policy(setup, make_policy("spark-da:shuffle_tracking=off", CONFIG))
    assert result.scaleout[-1] < 12
    assert not any(r.to_scaleout > r.from_scaleout for r in result.rescales)


def test_batch_ratio_scales_in_one_per_interval_when_batches_are_short() -> None:
    jm = _kubernetes(trigger_s=5.0).model_copy(update={"initial_scaleout": 8})
    setup = make_setup(np.full(600, 3000.0), jm, CONFIG, 1, sized_for_per_s=35000.0)
    result = run_policy(setup, make_policy("batch-ratio", CONFIG))
    steps = [(r.time_s, r.from_scaleout - r.to_scaleout) for r in result.rescales]
    assert steps
    assert all(t % 60 == 0 and d == 1 for t, d in steps)
    assert result.scaleout[-1] < 8


def test_batch_ratio_scales_out_when_batches_outlast_the_trigger() -> None:
    jm = load_job_model("kubernetes").model_copy(update={"initial_scaleout": 2})
    setup = make_setup(np.full(300, 30000.0), jm, CONFIG, 1, sized_for_per_s=35000.0)
    result = run_policy(setup, make_policy("batch-ratio", CONFIG))
    assert result.rescales
    assert result.rescales[0].time_s == 60 and result.rescales[0].to_scaleout > 2


@pytest.mark.parametrize("name", ["spark-da", "batch-ratio"])
def test_the_continuous_engine_is_refused(name: str) -> None:
    setup = make_setup(np.full(120, 1000.0), load_job_model(None), CONFIG, 1)
    with pytest.raises(ValueError, match="micro-batch job model"):
        run_policy(setup, make_policy(name, CONFIG))


def test_a_joining_executors_state_reload_counts_as_a_running_task() -> None:
    setup = make_setup(np.full(120, 20000.0), load_job_model("kubernetes"), CONFIG, 1, sized_for_per_s=35000.0)
    job = new_job(setup, initial_scaleout=2, rng=np.random.default_rng(1))
    assert isinstance(job, MicroBatchJob)
    job.advance(5)
    job.request_scaleout(3)
    job.advance(120)
    joined = [p for p in job.task_phases(0.0, 120.0) if 2 in p.slot.tolist()]
    first = joined[0]
    mine = first.slot == 2
    assert float(first.start_s[mine].min()) == pytest.approx(first.submit_s)  # stalled, yet running, not pending
    assert float(first.end_s[mine].max()) - first.submit_s >= job.rescales[0].stall_s - 1e-9
