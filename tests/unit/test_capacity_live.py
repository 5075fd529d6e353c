"""Capacity rules for what a live Spark job feeds the regression: joins, stalls, untrusted fits, backlogs, batches,
swings — one row per rule, and a property: no single executor moves the job's capacity past the bound silently."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daedalus_spark.analyze.batches import BatchEconomics, BatchFit
from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.config import CapacityConfig
from daedalus_spark.domain import BatchWindow, Observation
from daedalus_spark.report.capacity_report import capacity_from_csv
from tests.conftest import MEASUREMENTS

UTIL = [0.2 + 0.6 * i / 59 for i in range(60)]


def linear(capacity: float, util: list[float] = UTIL, idle: float = 0.1) -> list[float]:
    """Throughput of an executor that reads `capacity` records/s at full CPU and nothing at its idle floor."""
    return [capacity * (u - idle) / (1 - idle) for u in util]


def window(
    t: float, executors: dict[str, tuple[list[float], list[float]]], *, lag: float = 0.0, batches=None
) -> Observation:
    n = len(next(iter(executors.values()))[0])
    return Observation.of(
        time_s=t,
        workload_per_s=[0.0] * n,
        executors=executors,
        consumer_lag_records=lag,
        batches=batches,
    )


def settled_model(config: CapacityConfig, capacities: dict[str, float]) -> CapacityModel:
    """Executors already running when the controller first looks, each learned over one minute."""
    model = CapacityModel(config)
    model.learn(window(60.0, {w: (linear(c), UTIL) for w, c in capacities.items()}))
    return model


def tick(model: CapacityModel, obs: Observation, max_scaleout: int = 4):
    model.learn(obs)
    table = model.table(obs, max_scaleout)
    assert table is not None
    model.remember(table)
    return table


def test_a_joining_executor_is_not_learned_from_until_it_has_read_records_for_the_warmup() -> None:
    model = settled_model(CapacityConfig(executor_warmup_s=30), {"a": 1000.0})
    # "b" registers: 35 s of CPU busy without records (state loads), then reads records from t=96 s on.
    b_thr = [0.0] * 35 + linear(1000.0)[35:]
    b_util = [0.9] * 35 + UTIL[35:]
    obs = window(120.0, {"a": (linear(1000.0), UTIL), "b": (b_thr, b_util)})
    model.learn(obs)
    assert model.regressions["b"].n == 0  # settled only at t=126 s
    table = model.table(obs, 4)
    assert table is not None
    assert {w.executor_id: w.method for w in table.executors}["b"] == "joining"
    assert table.current_per_s == pytest.approx(2000.0, rel=1e-6)  # it counts as its peer, not as 0
    model.learn(window(180.0, {"a": (linear(1000.0), UTIL), "b": (linear(1000.0), UTIL)}))
    assert model.regressions["b"].n == 60 - 5  # from t=126 s on


def test_stall_samples_below_a_trusted_fit_are_not_learned() -> None:
    model = settled_model(CapacityConfig(), {"a": 1000.0})
    before = (model.regressions["a"].slope, model.regressions["a"].n)
    stalled = [0.95] * 10, [30.0] * 10  # CPU busy, a few records: state moving, tasks retried
    model.learn(window(70.0, {"a": (stalled[1], stalled[0])}))
    assert (model.regressions["a"].slope, model.regressions["a"].n) == pytest.approx(before)


def test_samples_without_records_are_not_learned() -> None:
    model = CapacityModel(CapacityConfig())
    learned = model.learn(window(60.0, {"a": ([0.0] * 5 + linear(1000.0)[5:], UTIL)}))
    assert learned == 55


@pytest.mark.parametrize(
    ("b_capacity", "b_util", "expected"),
    [
        # "c" has no fitted slope (constant CPU) and a low ratio estimate: alone it does not set the job's capacity.
        pytest.param(1000.0, UTIL, 3 * 1000.0, id="one-unfitted-low-estimate-is-overruled"),
        # With "b" fitted and slow, the job saturates when "b" does, whatever "c" says.
        pytest.param(600.0, UTIL, 3 * 600.0, id="a-fitted-slow-executor-sets-it"),
    ],
)
def test_an_unfitted_executor_never_sets_the_jobs_capacity_alone(b_capacity, b_util, expected) -> None:
    model = CapacityModel(CapacityConfig())
    c = ([300.0] * 60, [0.9] * 60)  # same share, no spread in CPU: ratio estimate 333/s, far below its peers
    obs = window(60.0, {"a": (linear(1000.0), UTIL), "b": (linear(b_capacity, b_util), b_util), "c": c})
    model.learn(obs)
    table = model.table(obs, 4)
    assert table is not None
    methods = {w.executor_id: w.method for w in table.executors}
    assert methods["a"] == "regression"
    assert methods["c"] == "peers"
    shares = {w.executor_id: w.load_share_ratio for w in table.executors}
    assert table.current_per_s == pytest.approx(min(1000.0 / shares["a"], b_capacity / shares["b"]), rel=1e-6)
    assert table.current_per_s == pytest.approx(expected, rel=0.35)


def test_two_unfitted_executors_that_agree_do_set_it() -> None:
    model = CapacityModel(CapacityConfig())
    flat = ([300.0] * 60, [0.9] * 60)
    obs = window(60.0, {"a": (linear(1000.0), UTIL), "c": flat, "d": flat})
    model.learn(obs)
    table = model.table(obs, 4)
    assert table is not None
    share = {w.executor_id: w.load_share_ratio for w in table.executors}["c"]
    assert table.current_per_s == pytest.approx(300.0 / 0.9 / share)


def test_capacity_never_falls_with_more_executors() -> None:
    # Kafka placement of 31 partitions' worth of one topic: at 31 executors every partition prefers one executor.
    model = settled_model(CapacityConfig(partitions=8, partition_assignment="kafka"), {"a": 1000.0, "b": 1000.0})
    table = tick(model, window(120.0, {"a": (linear(1000.0), UTIL), "b": (linear(1000.0), UTIL)}), 40)
    caps = np.array(table.per_scaleout_per_s)
    assert np.all(np.diff(caps) >= 0)
    assert np.all(np.diff(table.catch_up_per_scaleout_per_s) >= 0)


@pytest.mark.parametrize(
    "worked_off",
    [
        # large batches amortize the per-batch cost: more than the regression says
        pytest.param(1500.0, id="above-the-regression-raises-it"),
        # a slower machine than the one the regression was learned on: less, and the table says so at once
        pytest.param(600.0, id="below-the-regression-lowers-it"),
    ],
)
def test_while_behind_without_a_batch_line_the_rate_a_backlog_is_worked_off_at_is_the_capacity(worked_off) -> None:
    model = settled_model(CapacityConfig(backlog_floor_lag_s=10, max_change_ratio=0), {"a": 1000.0})
    tick(model, window(120.0, {"a": (linear(1000.0), UTIL)}))
    # A backlog: 60 s at full CPU with 100,000 records still waiting.
    busy = [1.0] * 60
    ends_behind = tick(model, window(180.0, {"a": ([worked_off] * 60, busy)}, lag=100_000.0))
    assert ends_behind.current_basis != "backlog"  # only its end is known to be behind: it may have kept up before
    assert model.saturated_per_scaleout == {}
    # Behind from start to end: the next window.
    table = tick(model, window(240.0, {"a": ([worked_off] * 60, busy)}, lag=100_000.0))
    assert model.backlog_floor_per_scaleout[1] == pytest.approx(worked_off)
    assert model.saturated_per_scaleout[1] == pytest.approx(worked_off)
    assert (
        model.regressions["a"].n == 120
    )  # the settled minute and the next; the backlog's samples are not learned as steady state
    assert (table.current_per_s, table.current_basis) == (pytest.approx(worked_off), "backlog")
    assert table.catch_up_at(1) == pytest.approx(worked_off)
    assert table.catch_up_at(2) >= table.at(2)


def test_no_floor_from_a_window_with_little_lag() -> None:
    model = settled_model(CapacityConfig(backlog_floor_lag_s=10), {"a": 1000.0})
    tick(model, window(120.0, {"a": ([1500.0] * 60, [1.0] * 60)}, lag=1500.0 * 5))
    assert model.backlog_floor_per_scaleout == {}


def batches(records_per_batch: float, fixed_s: float = 0.2, per_record_s: float = 1e-4, n: float = 10.0):
    return BatchWindow(n, n * records_per_batch, n * (fixed_s + records_per_batch * per_record_s))


def test_batch_economics_size_at_steady_state_and_recover_at_catch_up() -> None:
    model = settled_model(CapacityConfig(trigger_interval_s=1.0, max_change_ratio=0), {"a": 1000.0})
    table = None
    for i, size in enumerate([1000, 2000, 3000, 4000, 6000, 8000]):
        table = tick(model, window(120.0 + 60 * i, {"a": (linear(1000.0), UTIL)}, batches=batches(size)))
    assert table is not None
    # seconds per batch = 0.2 + records x 1e-4: at a 1-s trigger (1 - 0.2) / 1e-4 = 8,000/s fit one batch each,
    # and back-to-back batches of the largest size seen (8,000) run at 8,000 / (0.2 + 0.8) = 8,000/s.
    assert table.current_per_s == pytest.approx(8000.0, rel=1e-6)
    assert table.current_basis == "batch_line"
    assert table.catch_up_at(1) == pytest.approx(8000.0, rel=1e-6)
    fit = model.batches.fit(1)
    assert fit is not None
    assert (fit.fixed_s, fit.per_record_s) == pytest.approx((0.2, 1e-4))
    assert fit.steady_per_s(2.0) == pytest.approx(9000.0)
    # A fixed cost above the trigger: batches always run back to back; sized for batches of twice the fixed cost.
    assert fit.steady_per_s(0.3) == pytest.approx((1 - 0.2 / 0.4) / 1e-4)


# seconds per batch = 0.2 + records x 1e-4
@pytest.mark.parametrize(
    ("trigger_s", "objective_s", "expected"),
    [
        pytest.param(1.0, 30.0, (1 - 0.2 / 15.0) / 1e-4, id="objective-30s-batches-up-to-15s"),
        pytest.param(1.0, 1.0, 8000.0, id="objective-below-two-triggers-is-the-trigger-s-rate"),
        pytest.param(0.3, 0.5, (1 - 0.2 / 0.4) / 1e-4, id="fixed-cost-above-the-trigger-twice-the-fixed-cost"),
        pytest.param(1.0, 0.0, 8000.0, id="no-objective-is-the-trigger-s-rate"),
        pytest.param(0.0, 30.0, None, id="no-trigger-unknown"),
    ],
)
def test_capacity_at_a_latency_objective_from_a_known_batch_line(
    trigger_s: float, objective_s: float, expected: float | None
) -> None:
    fit = BatchFit(fixed_s=0.2, per_record_s=1e-4, largest_batch_records=8000.0)
    rate = fit.at_latency_per_s(trigger_s, objective_s)
    assert rate == (None if expected is None else pytest.approx(expected))
    if rate is not None and objective_s >= 2 * fit.batch_bound_s(trigger_s):
        # back to back at that rate a batch lasts fixed / (1 - rate x per_record): half the objective, so a record
        # that waits for the running batch and then its own is within it
        assert 2 * fit.fixed_s / (1 - rate * fit.per_record_s) == pytest.approx(objective_s)


def test_sizing_is_at_the_latency_objective_and_the_trigger_s_figure_is_reported_beside_it() -> None:
    model = settled_model(CapacityConfig(trigger_interval_s=1.0, max_change_ratio=0), {"a": 1000.0})
    table = None
    for i, size in enumerate([1000, 2000, 3000, 4000, 6000, 8000]):
        obs = window(120.0 + 60 * i, {"a": (linear(1000.0), UTIL)}, batches=batches(size))
        model.learn(obs)
        table = model.table(obs, 4, target_latency_s=30.0)
        assert table is not None
        model.remember(table)
    assert table is not None
    assert table.current_per_s == pytest.approx((1 - 0.2 / 15.0) / 1e-4, rel=1e-6)
    assert table.current_at_trigger_per_s == pytest.approx(8000.0, rel=1e-6)


@pytest.mark.parametrize(
    ("window_", "learned"),
    [
        pytest.param(None, False, id="none"),
        pytest.param(BatchWindow(0.5, 10.0, 1.0), False, id="less-than-one-batch"),
        pytest.param(BatchWindow(3.0, 0.0, 1.0), False, id="no-records"),
        pytest.param(BatchWindow(3.0, 10.0, math.nan), False, id="nan"),
        pytest.param(BatchWindow(3.0, 30.0, 1.5), True, id="usable"),
    ],
)
def test_batch_windows_learned_only_when_usable(window_, learned) -> None:
    economics = BatchEconomics()
    assert economics.learn(2, window_) is learned
    assert (2 in economics.fits) is learned


def test_batch_windows_during_a_join_are_not_learned() -> None:
    model = settled_model(CapacityConfig(), {"a": 1000.0})
    model.learn(window(120.0, {"a": (linear(1000.0), UTIL), "b": (linear(1000.0), UTIL)}, batches=batches(3000)))
    assert model.batches.fits == {}


def test_a_swing_is_held_at_the_bound_with_a_note_then_believed_when_it_holds() -> None:
    model = settled_model(CapacityConfig(max_change_ratio=0.5, change_confirm_ticks=2), {"a": 1000.0})
    first = tick(model, window(120.0, {"a": (linear(1000.0), UTIL)}))
    assert first.notes == ()
    swing = CapacityConfig(max_change_ratio=0.5, change_confirm_ticks=2)
    fresh = settled_model(swing, {"a": 4000.0})  # what the same executor would say on its own: 4x
    model.regressions = fresh.regressions
    model.pooled = fresh.pooled
    held = tick(model, window(180.0, {"a": (linear(4000.0), UTIL)}))
    assert held.current_per_s == pytest.approx(first.current_per_s * 1.5)
    assert (first.current_basis, held.current_basis) == ("utilization", "bounded")
    assert "held at" in held.notes[0] and "1 of" not in held.notes[0]
    believed = tick(model, window(240.0, {"a": (linear(4000.0), UTIL)}))
    assert believed.current_per_s > 3 * first.current_per_s
    assert "believed" in believed.notes[0] and "2 ticks in a row" in believed.notes[0]


def test_a_rise_shown_by_a_backlog_is_believed_at_once() -> None:
    model = settled_model(CapacityConfig(max_change_ratio=0.5), {"a": 1000.0})
    first = tick(model, window(120.0, {"a": (linear(1000.0), UTIL)}))
    fresh = settled_model(CapacityConfig(), {"a": 3000.0})
    model.regressions, model.pooled = fresh.regressions, fresh.pooled
    table = tick(model, window(180.0, {"a": ([2900.0] * 60, [1.0] * 60)}, lag=1e6))
    assert table.current_per_s > 2 * first.current_per_s
    assert "backlog" in table.notes[0]


def test_knowledge_round_trip_keeps_the_new_evidence() -> None:
    model = settled_model(CapacityConfig(trigger_interval_s=1.0), {"a": 1000.0})
    for i, size in enumerate([1000, 3000, 5000, 7000, 9000]):
        tick(model, window(120.0 + 60 * i, {"a": ([1500.0] * 60, [1.0] * 60)}, lag=1e6, batches=batches(size)))
    again = CapacityModel.from_state(model.config, model.to_state())
    assert again.to_state() == model.to_state()
    assert again.batches.fit(1) == model.batches.fit(1)


def test_offline_capacity_aligns_throughput_with_the_one_minute_cpu_when_told() -> None:
    """The paper's CPU is a 1-minute average of 15-s rows: --utilization-window 60 averages 4 rows of throughput.
    Its file does not say so: by default the rows are taken as aligned (and `assumption()` says so)."""
    util, thr = MEASUREMENTS / "assumptions_cpu_1.csv", MEASUREMENTS / "assumptions_throughput_1.csv"
    minute = capacity_from_csv(util, thr, CapacityConfig(), utilization_window_s=60)
    four_rows = capacity_from_csv(util, thr, CapacityConfig(), smooth_samples=4)  # 15-s rows: one minute
    default = capacity_from_csv(util, thr, CapacityConfig())
    unaligned = capacity_from_csv(util, thr, CapacityConfig(), utilization_window_s=0)
    assert minute.table.current_per_s == four_rows.table.current_per_s
    assert default.table.current_per_s == unaligned.table.current_per_s != minute.table.current_per_s
    assert default.assumption() is not None and minute.assumption() is None


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["a", "b", "c"]),
    st.lists(st.floats(0, 1.2), min_size=5, max_size=60),
    st.lists(st.floats(0, 1e7), min_size=5, max_size=60),
)
def test_one_executors_samples_never_move_the_job_past_the_bound_without_a_note(who, util, thr) -> None:
    bound = 0.5
    model = settled_model(CapacityConfig(max_change_ratio=bound), {"a": 1000.0, "b": 1200.0, "c": 900.0})
    n = min(len(util), len(thr))
    normal = {w: (linear(c)[-n:], UTIL[-n:]) for w, c in {"a": 1000.0, "b": 1200.0, "c": 900.0}.items()}
    before = tick(model, window(120.0, normal))
    after = tick(model, window(120.0 + n, {**normal, who: (thr[:n], util[:n])}))
    change = abs(after.current_per_s / before.current_per_s - 1)
    assert change <= bound + 1e-9 or after.notes


def test_what_the_job_carried_while_keeping_up_is_a_floor_when_utilization_follows_the_load() -> None:
    # CPU ~0.9 at any load (a micro-batch job's per-batch cost): throughput / utilization merely follows the load.
    flat = [0.9] * 60
    model = CapacityModel(CapacityConfig(max_change_ratio=0, executor_warmup_s=0))
    tick(model, window(60.0, {"a": ([900.0] * 60, flat)}))
    tick(model, window(120.0, {"a": ([900.0] * 60, flat)}))  # kept up with 900/s (no lag)
    quiet = tick(model, window(180.0, {"a": ([200.0] * 60, flat)}))
    assert model.kept_up_per_scaleout[1] == pytest.approx(900.0)
    assert quiet.current_per_s >= 900.0  # not 200 / 0.9


def test_the_inlined_learning_loop_is_welfords_update_to_the_last_bit() -> None:
    """One executor: its regression (updated in `learn`'s own loop, stalls and warm-up skipped) and the pooled one
    (`OnlineRegression.update_all` over the samples learned) saw the same samples and must hold the same moments."""
    model = settled_model(CapacityConfig(), {"a": 1000.0})
    rng = np.random.default_rng(7)
    for k in range(20):
        util = list(rng.uniform(0.1, 1.1, 60))  # above 1 too: learned as 1
        thr = [c if rng.random() > 0.05 else 0.03 * c for c in linear(1000.0, util)]  # a few stalls
        model.learn(window(70.0 + 60.0 * k, {"a": (thr, util)}))
    offered = 60 + 20 * 60
    assert offered - 100 < model.regressions["a"].n < offered, "the stalls, and only they, were skipped"
    assert model.regressions["a"] == model.pooled


def test_after_a_scale_in_the_throughput_of_a_job_that_keeps_up_does_not_lower_the_estimate() -> None:
    # Three fitted executors give scale-out 2 its estimate; after the scale-in the two new executors' CPU stays high
    # at any load (no fit), and each carries 300/s.
    fitted = dict.fromkeys(("a", "b", "e"), 1000.0)
    model = settled_model(CapacityConfig(max_change_ratio=0, executor_warmup_s=0), fitted)
    before = tick(model, window(120.0, {w: (linear(c), UTIL) for w, c in fitted.items()}))
    estimate = before.at(2)
    assert estimate > 1200.0
    flat = {w: ([300.0] * 60, [0.9] * 60) for w in ("c", "d")}
    keeping_up = tick(model, window(180.0, flat))
    assert keeping_up.current_per_s == pytest.approx(estimate)
    assert any("is a floor" in note for note in keeping_up.notes)
    # A backlog is evidence that it carries less.
    behind = tick(model, window(240.0, flat, lag=1e6))
    assert behind.current_per_s < estimate


@pytest.mark.parametrize(
    ("arrivals", "kept"),
    [
        pytest.param(1000.0, 1000.0, id="throughput-above-the-arrivals-was-a-backlog-worked-off"),
        pytest.param(2000.0, 1500.0, id="arrivals-above-the-throughput-carried-what-it-processed"),
    ],
)
def test_what_a_job_kept_up_with_is_the_arrival_rate_it_carried(arrivals, kept) -> None:
    model = CapacityModel(CapacityConfig(max_change_ratio=0, executor_warmup_s=0))
    for t in (60.0, 120.0):
        obs = Observation.of(time_s=t, workload_per_s=[arrivals] * 60, executors={"a": ([1500.0] * 60, [0.9] * 60)})
        tick(model, obs)
    assert model.kept_up_per_scaleout[1] == pytest.approx(kept)


def micro_batch_model() -> tuple[CapacityModel, float]:
    """One executor with a known batch line (a micro-batch job), then a second joins: scale-out 2, no line there
    yet. Returns the model and the table's capacity at 2 before the join."""
    model = settled_model(
        CapacityConfig(trigger_interval_s=1.0, max_change_ratio=0.5, executor_warmup_s=0), {"a": 1000.0}
    )
    table = None
    for i, size in enumerate([400, 500, 600, 700, 800, 900]):
        table = tick(model, window(120.0 + 60 * i, {"a": (linear(1000.0), UTIL)}, batches=batches(size)))
    assert table is not None and model.batches.fit(1) is not None and model.batches.fit(2) is None
    return model, table.at(2)


def test_a_micro_batch_jobs_utilization_is_not_evidence_of_a_rise_at_a_scale_out_without_its_own_line() -> None:
    model, at_two = micro_batch_model()
    # Two executors whose busy time reads low while they work through a backlog: throughput / utilization says 8x.
    idle = {w: ([900.0] * 60, [0.12] * 60) for w in ("a", "b")}
    table = tick(model, window(600.0, idle), max_scaleout=4)
    assert table.current_per_s == pytest.approx(at_two)
    assert any("is not evidence of a rise" in note for note in table.notes), table.notes
    # Again on the next tick: still not believed (the two-ticks rule confirms a rise the evidence allows, not this).
    again = tick(model, window(660.0, idle), max_scaleout=4)
    assert again.current_per_s == pytest.approx(at_two)


def test_ticks_in_a_row_confirm_a_change_at_one_scale_out_only() -> None:
    model = settled_model(
        CapacityConfig(max_change_ratio=0.5, change_confirm_ticks=2, executor_warmup_s=0), {"a": 1000.0}
    )
    tick(model, window(120.0, {"a": (linear(1000.0), UTIL)}))
    fresh = settled_model(CapacityConfig(), {"a": 4000.0, "b": 4000.0})
    model.regressions, model.pooled = fresh.regressions, fresh.pooled
    held = tick(model, window(180.0, {"a": (linear(4000.0), UTIL)}))
    assert "held at" in held.notes[0]
    # The next tick runs at another scale-out: its own change beyond the bound is its first tick, not the second.
    other = tick(model, window(240.0, {w: (linear(4000.0), UTIL) for w in ("a", "b")}))
    assert any("(this is 1)" in note for note in other.notes), other.notes


def noisy_line(sizes: list[float], noise_s: list[float]) -> BatchFit:
    """The fit of seconds = 0.2 + records x 1e-4 (+ noise) over one window per size."""
    economics = BatchEconomics()
    for size, noise in zip(sizes, noise_s, strict=True):
        economics.learn(1, BatchWindow(1.0, size, 0.2 + size * 1e-4 + noise))
    fit = economics.fit(1)
    assert fit is not None
    return fit


LINE_AT_30S = (1 - 0.2 / 15.0) / 1e-4  # the line's own rate at a 30-s objective: batches of 15 s
ALTERNATING = [0.05, -0.05] * 20


@pytest.mark.parametrize(
    ("sizes", "noise_s", "low", "high"),
    [
        pytest.param([1000, 2000, 4000, 6000, 8000], [0.0] * 5, 1.0, 1.0, id="exact-line-is-believed-as-is"),
        # five windows of 8,000-12,000 records, 0.05 s about the line: batches of 148,000 are far from them
        pytest.param(
            [8000, 9000, 10000, 11000, 12000], [0.05, -0.05, 0.05, -0.05, 0.05], 0.7, 0.85, id="few-similar-windows"
        ),
        pytest.param(
            [8000 + 100 * i for i in range(40)], ALTERNATING, 0.9, 0.96, id="many-windows-still-far-from-15s-batches"
        ),
        pytest.param(
            [10000 + 3500 * i for i in range(40)], ALTERNATING, 0.99, 1.0, id="many-windows-up-to-15s-batches"
        ),
    ],
)
def test_the_sizing_rate_is_read_off_the_lines_upper_bound(sizes, noise_s, low, high) -> None:
    fit = noisy_line(sizes, noise_s)
    rate = fit.at_latency_per_s(1.0, 30.0)
    assert rate is not None
    assert low * LINE_AT_30S <= rate <= high * LINE_AT_30S * (1 + 1e-9)
    # the batch it rests on lasts the objective's half by the bound: B / rate = 15 s
    assert fit.seconds_bound(rate * 15.0) == pytest.approx(15.0, rel=1e-6)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.floats(500, 50_000), st.floats(-0.3, 0.3)), min_size=5, max_size=30),
    st.floats(0.0, 120.0),
)
def test_the_bounded_rate_never_exceeds_the_lines_own(windows, objective_s) -> None:
    economics = BatchEconomics(min_correlation_ratio=0.0)
    for size, noise in windows:
        economics.learn(1, BatchWindow(1.0, size, 0.2 + size * 1e-4 + noise))
    fit = economics.fit(1)
    if fit is None:
        return
    bounded, point = fit.at_latency_per_s(1.0, objective_s), replace(fit, line=None).at_latency_per_s(1.0, objective_s)
    assert bounded is not None and point is not None
    assert 0.0 <= bounded <= point * (1 + 1e-9)


def behind(t: float, arrivals: float, throughput: float) -> Observation:
    """A window with a large backlog, `arrivals` records/s coming in and the CPU busy."""
    return Observation.of(
        time_s=t,
        workload_per_s=[arrivals] * 60,
        executors={"a": ([throughput] * 60, [1.0] * 60)},
        consumer_lag_records=1e6,
    )


def test_a_rise_is_not_believed_while_the_job_works_a_backlog_off() -> None:
    model = settled_model(CapacityConfig(max_change_ratio=0.5, change_confirm_ticks=2), {"a": 1000.0})
    first = tick(model, window(120.0, {"a": (linear(1000.0), UTIL)}))
    assert first.current_per_s == pytest.approx(1000.0, rel=0.05)
    fresh = settled_model(CapacityConfig(), {"a": 4000.0})  # the regression now says 4x
    model.regressions, model.pooled = fresh.regressions, fresh.pooled
    # Behind right after a restart (its first samples not learned from, so not a settled backlog): no rise at all.
    obs = behind(180.0, 1000.0, 1200.0)
    model.learn(obs, skip_first=5)
    held = model.table(obs, 4)
    assert held is not None
    assert (held.current_per_s, held.current_basis) == (pytest.approx(first.current_per_s), "bounded")
    assert any("no rise while the job is behind" in note for note in held.notes), held.notes
    model.remember(held)
    # Three settled ticks behind, working the backlog off at 1,200/s: less than the 4,000/s the regression says.
    for t in (240.0, 300.0, 360.0):
        held = tick(model, behind(t, 1000.0, 1200.0))
        assert (held.current_per_s, held.current_basis) == (pytest.approx(1200.0), "backlog")


@pytest.mark.parametrize(
    ("floors", "arrivals", "expected", "basis"),
    [
        # nothing shown elsewhere: the regressions' 2 x 3,000/s stand
        pytest.param({}, 500.0, 6000.0, "utilization", id="nothing-saturated-elsewhere"),
        # 1 executor, behind throughout, did 600/s: 2, each with half the load, carry at most 1,200/s
        pytest.param({1: 600.0}, 500.0, 1200.0, "scaled_backlog", id="saturated-at-1-caps-2"),
        # what 2 carried themselves stands above it
        pytest.param({1: 600.0}, 2000.0, 2000.0, "kept_up", id="its-own-evidence-stands"),
        # saturated elsewhere at a rate that allows more: caps nothing
        pytest.param({1: 4000.0}, 500.0, 6000.0, "utilization", id="a-higher-rate-caps-nothing"),
    ],
)
def test_no_scale_out_carries_more_than_the_job_did_saturated_elsewhere_in_proportion(
    floors, arrivals, expected, basis
) -> None:
    model = settled_model(CapacityConfig(), {"a": 3000.0, "b": 3000.0})
    model.saturated_per_scaleout.update(floors)
    obs = Observation.of(
        time_s=180.0,  # a settled window: what it carries is evidence
        workload_per_s=[arrivals] * 60,
        executors={w: (linear(3000.0), UTIL) for w in ("a", "b")},
        consumer_lag_records=0.0,
    )
    table = tick(model, obs)
    assert (table.current_per_s, table.current_basis) == (pytest.approx(expected, rel=0.05), basis)
    assert any("did saturated at another scale-out" in note for note in table.notes) == (expected < 6000.0)
    again = CapacityModel.from_state(model.config, model.to_state())
    assert again.saturated_per_scaleout == model.saturated_per_scaleout


@pytest.mark.parametrize(
    ("busy", "learned"),
    [
        pytest.param(0.45, 0.45, id="a micro-batch job saturates below a busy fraction of 1"),
        pytest.param(1.0, 1.0, id="a job that saturates its cores"),
        pytest.param(0.05, None, id="a backlog its executors barely work on says nothing of them"),
    ],
)
def test_capacity_is_read_at_the_utilization_a_backlog_showed_saturated(busy: float, learned: float | None) -> None:
    model = settled_model(CapacityConfig(), {"a": 4000.0})  # the regression: 4,000/s at a busy fraction of 1
    first = tick(model, window(120.0, {"a": (linear(4000.0), UTIL)}))
    assert first.current_per_s == pytest.approx(4000.0, rel=0.05)
    tick(model, window(180.0, {"a": ([1300.0] * 60, [busy] * 60)}, lag=1e6))
    assert model.saturated_utilization_ratio == (None if learned is None else pytest.approx(learned))
    if learned is not None:
        # the regression is read where this executor saturates, not at 1
        assert model.own_capacity("a")[0] == pytest.approx(4000.0 * (learned - 0.1) / 0.9, rel=0.05)
        again = CapacityModel.from_state(model.config, model.to_state())
        assert again.saturated_utilization_ratio == model.saturated_utilization_ratio


@pytest.mark.parametrize(
    ("batches_", "trigger_s", "saturated"),
    [
        # a fixed cost per batch: the job holds more than 10 s of input, but its batches read what arrives
        pytest.param(BatchWindow(6.0, 36_000.0, 60.0), 0.0, False, id="batches-read-the-arrivals-kept-up"),
        pytest.param(None, 0.0, True, id="no-batches-behind-at-both-ends-is-saturated"),
        pytest.param(BatchWindow(6.0, 24_000.0, 60.0), 0.0, True, id="batches-read-slower-fell-behind"),
        pytest.param(BatchWindow(6.0, 54_000.0, 60.0), 0.0, True, id="batches-read-faster-worked-a-backlog-off"),
        # 4 batches of 9,000 lines, 6 s each, every 15 s: 600/s over the trigger's interval, 1,500/s over their time
        pytest.param(BatchWindow(4.0, 36_000.0, 24.0), 15.0, False, id="short-batches-read-over-the-trigger"),
        pytest.param(BatchWindow(4.0, 36_000.0, 24.0), 0.0, True, id="the-same-without-a-trigger-worked-off"),
    ],
)
def test_a_micro_batch_job_is_saturated_only_where_its_batches_do_not_keep_up(
    batches_: BatchWindow | None, trigger_s: float, saturated: bool
) -> None:
    """Behind at both ends of two windows (6,000 lines of lag, 10 s of the 550/s the executor reads) at 550 lines/s
    of arrivals."""
    model = settled_model(CapacityConfig(backlog_floor_lag_s=10, trigger_interval_s=trigger_s), {"a": 1000.0})

    def behind(t: float) -> Observation:
        return Observation.of(
            time_s=t,
            workload_per_s=[550.0] * 60,
            executors={"a": ([550.0] * 60, [0.5] * 60)},
            consumer_lag_records=6_000.0,
            batches=batches_,
        )

    tick(model, behind(120.0))
    table = tick(model, behind(180.0))
    assert (1 in model.saturated_per_scaleout) == saturated
    assert (table.current_basis == "backlog") == saturated
    # batches that kept up worked no backlog off: no floor, and nothing to believe a fall of capacity on
    assert model.backlog_floor_per_scaleout.get(1) == (pytest.approx(550.0) if saturated else None)


def test_a_kept_figure_the_job_shows_saturated_below_is_dropped() -> None:
    """Two executors' first table from their utilization regressions (6,000/s) is kept; the job then learns a batch
    line at 1 (800/s: a micro-batch job) and, back at 2 without a line there, works a backlog off at 2,000/s throughout:
    the kept 6,000 stands no longer, and a table made at 1 extrapolates to 2."""
    config = CapacityConfig(trigger_interval_s=1.0, backlog_floor_lag_s=10, max_change_ratio=0, executor_warmup_s=0)
    model = settled_model(config, {"a": 3000.0, "b": 3000.0})
    first = tick(model, window(120.0, {w: (linear(3000.0), UTIL) for w in ("a", "b")}))
    assert model.observed_per_scaleout == {2: pytest.approx(first.current_per_s)}
    for i, size in enumerate([400, 500, 600, 700, 800, 900]):
        tick(model, window(180.0 + 60 * i, {"a": (linear(3000.0), UTIL)}, batches=batches(size, per_record_s=1e-3)))
    assert model.batches.fit(1) is not None and model.observed_per_scaleout[2] == pytest.approx(first.current_per_s)
    busy = {w: ([1000.0] * 60, [1.0] * 60) for w in ("a", "b")}
    tick(model, window(600.0, busy, lag=100_000.0))
    table = tick(model, window(660.0, busy, lag=100_000.0))
    assert (table.current_per_s, table.current_basis) == (pytest.approx(2000.0), "backlog")
    assert 2 not in model.observed_per_scaleout
    one = tick(model, window(720.0, {"a": (linear(3000.0), UTIL)}, batches=batches(900, per_record_s=1e-3)))
    assert one.at(2) < first.current_per_s and 2 not in one.observed_scaleouts
