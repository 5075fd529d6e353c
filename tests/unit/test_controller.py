"""The controller tick: analyze + plan over the knowledge, skips on bad data, and restarts that lose nothing."""

import math

import numpy as np
import pytest

from daedalus_spark.analyze.recovery_measurement import PendingRecovery
from daedalus_spark.config import parse_config
from daedalus_spark.controller import Controller, seen_since_gap
from daedalus_spark.domain import Decision, Observation, Reason
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import InMemoryKnowledgeStore, restore, snapshot
from daedalus_spark.plan.budget import rescale_tokens
from daedalus_spark.testing import CAPACITY, CONFIG, step, window
from tests.conftest import observation


def drive(controller, ticks, *, workload=1000.0, scaleout=4, start=60.0, seed=0):
    rng = np.random.default_rng(seed)
    decisions = []
    for k in range(ticks):
        t = start + 60.0 * k
        decision = step(controller, window(t, workload, scaleout, rng=rng), t)
        decisions.append(decision)
        scaleout = decision.target_scaleout
    return decisions


def test_overprovisioned_job_scales_in_to_the_smallest_valid_scaleout():
    # A load varying within the minute spreads utilization enough for the regression to be trusted.
    decisions = drive(Controller(CONFIG), 3, workload=1000 + 400 * np.sin(np.arange(60) * np.pi / 10), scaleout=8)
    first = decisions[0]
    assert first.reason is Reason.PLAN_SCALES_IN  # the default planner: horizon
    assert first.target_scaleout == 3  # 2 x 500/s only just carries 1000/s: no headroom to recover
    assert first.evidence.tick.capacity_current_per_s == pytest.approx(8 * CAPACITY, rel=0.05)
    assert decisions[1].reason is Reason.COOLDOWN
    assert {w.method for w in Controller(CONFIG).knowledge.capacity.regressions.values()} <= {"regression"}


def test_steady_load_without_utilization_spread_falls_back_to_the_conservative_ratio():
    controller = Controller(CONFIG)
    first = drive(controller, 1, workload=1000.0, scaleout=8)[0]
    # 125/s at 32.5 % CPU with a 10 % idle floor: ratio 385/s per executor, below the true 500/s (the safe side).
    assert first.evidence.tick.capacity_current_per_s == pytest.approx(8 * 125 / 0.325, rel=0.02)


def test_overloaded_job_scales_out_with_its_capacity_learned_online():
    controller = Controller(CONFIG)
    d = drive(controller, 1, workload=3000.0, scaleout=4)[0]
    assert d.reason is Reason.PLAN_SCALES_OUT and d.target_scaleout >= 7
    assert controller.knowledge.recovery.pending is not None
    assert controller.knowledge.last_rescale_s == 60.0


@pytest.mark.parametrize(
    "obs,problem",
    [
        pytest.param(observation(workload=[math.nan] * 5, samples=5), "workload has missing", id="nan-workload"),
        pytest.param(observation(workload=[], executors={}, samples=0), "no workload samples", id="empty"),
        pytest.param(
            Observation.of(time_s=60, workload_per_s=[1.0], executors={}, scaleout=2),
            "no executor metrics",
            id="no-executors",
        ),
        pytest.param(observation(lag=-5), "consumer lag -5", id="negative-lag"),
        pytest.param(observation(scaleout=0), "scale-out 0", id="zero-scaleout"),
        pytest.param(
            observation(scaleout=3), "metrics for 1 executors but the scale-out is 3", id="partial-executor-view"
        ),
        pytest.param(observation(uptime_s=math.nan), "uptime nan s", id="nan-uptime"),
        pytest.param(observation(step_s=math.inf), "sample step inf s", id="infinite-step"),
        pytest.param(observation(time_s=math.nan), "time nan s", id="nan-time"),
        pytest.param(
            observation(workload=[5.0] * 10, executors={"w": ([1.0] * 4, [0.5] * 4)}),
            "not aligned with the workload's 10 samples: w",
            id="ragged-executor-series",
        ),
        pytest.param(
            observation(executors={"w": ([math.nan] * 60, [math.nan] * 60)}),
            "no executor capacity known",
            id="no-usable-executor-samples",
        ),
    ],
)
def test_never_scales_on_missing_or_absurd_data(obs, problem):
    controller = Controller(CONFIG)
    decision = controller.tick(obs, 600.0)
    assert decision.reason is Reason.SKIP_MISSING_DATA
    assert decision.target_scaleout == decision.current_scaleout
    assert problem in decision.evidence.skip.problem


def test_unknown_uptime_means_no_warmup():
    controller = Controller(CONFIG)
    controller.tick(window(60.0, 1000.0, 4, rng=np.random.default_rng(0), uptime_s=math.inf), 60.0)
    assert all(r.n == 60 for r in controller.knowledge.capacity.regressions.values())


def test_warmup_samples_are_skipped_and_no_decision_is_made():
    controller = Controller(CONFIG)
    obs = window(60.0, 1000.0, 4, rng=np.random.default_rng(0), uptime_s=30.0)
    decision = controller.tick(obs, 60.0)
    assert decision.reason is Reason.SKIP_WARMUP
    assert all(r.n == 0 for r in controller.knowledge.capacity.regressions.values())
    later = window(120.0, 1000.0, 4, rng=np.random.default_rng(1), uptime_s=90.0)
    controller.tick(later, 120.0)  # started at 30 s: samples covering 90-91 s on (stamped 61..90 s overlap warm-up)
    assert all(r.n == 30 for r in controller.knowledge.capacity.regressions.values())


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_restarted_controller_makes_the_same_next_decision(tmp_path, store_kind):
    store = InMemoryKnowledgeStore() if store_kind == "memory" else SqliteKnowledgeStore(tmp_path / "k.sqlite")
    rng = np.random.default_rng(3)
    workload = 1500 + 800 * np.sin(np.arange(60 * 40) / 600.0)
    original = Controller(CONFIG)
    scaleout = 6
    for k in range(25):
        t = 60.0 * (k + 1)
        scaleout = step(original, window(t, workload[60 * k : 60 * (k + 1)], scaleout, rng=rng), t).target_scaleout
    original.save(store)
    restarted = Controller.resume(CONFIG, store)
    for k in range(25, 40):
        t = 60.0 * (k + 1)
        obs = window(t, workload[60 * k : 60 * (k + 1)], scaleout, rng=rng)
        a, b = step(original, obs, t), step(restarted, obs, t)
        assert (a.target_scaleout, a.reason, a.evidence) == (b.target_scaleout, b.reason, b.evidence)
        scaleout = a.target_scaleout
    assert list(restarted.knowledge.decisions)[:25] == list(original.knowledge.decisions)[:25]


def test_snapshot_round_trip_keeps_every_learned_value():
    controller = Controller(CONFIG)
    drive(controller, 12, workload=3000.0, scaleout=4)
    k = controller.knowledge
    again = restore(snapshot(k), CONFIG)
    assert again.capacity.regressions == k.capacity.regressions
    assert again.capacity.observed_per_scaleout == k.capacity.observed_per_scaleout
    assert again.recovery.moments == k.recovery.moments and again.recovery.pending == k.recovery.pending
    assert (again.last_rescale_s, list(again.decisions)) == (k.last_rescale_s, list(k.decisions))
    a, b = snapshot(again), snapshot(k)
    assert (a.components, a.decisions, a.recoveries) == (b.components, b.decisions, b.recoveries)
    assert again.forecaster.predict(800.0) == k.forecaster.predict(800.0)


@pytest.mark.parametrize(
    ("times", "now", "expected"),
    [
        pytest.param([], 0.0, 3.0, id="no-rescale-full-bucket"),
        # 3 - 1 = 2 at 0; + 60 s * 3/3600 = 2.05 - 1 at 60; + 0.05 - 1 at 120 -> 0.1
        pytest.param([0.0, 60.0, 120.0], 120.0, 0.1, id="three-in-two-minutes"),
        pytest.param([0.0, 60.0, 120.0], 1200.0, 1.0, id="a-whole-token-18-minutes-later"),
        pytest.param([0.0, 60.0, 120.0], 1e6, 3.0, id="refilled-no-further-than-full"),
        pytest.param([0.0, 1.0, 2.0, 3.0, 4.0], 4.0, -2.0 + 4 / 1200, id="forced-scale-outs-leave-debt"),
        pytest.param([120.0, 0.0, 60.0], 120.0, 0.1, id="order-of-the-records-does-not-matter"),
    ],
)
def test_rescale_budget_is_a_token_bucket(times, now, expected):
    assert rescale_tokens(times, now, per_hour=3.0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("times", "now", "expected"),
    [
        pytest.param([], 0.0, 0.0, id="empty-at-the-first-tick"),
        pytest.param([], 1200.0, 1.0, id="a-token-earned-in-20-minutes"),
        pytest.param([], 1e6, 3.0, id="full-after-an-hour"),
        pytest.param([600.0], 1200.0, 0.0, id="a-scale-out-in-debt-paid-back"),  # 0.5 - 1 at 600, + 0.5
    ],
)
def test_rescale_budget_fills_from_the_oldest_tick_remembered(times, now, expected):
    assert rescale_tokens(times, now, per_hour=3.0, since_s=0.0) == pytest.approx(expected)


def test_a_fresh_controller_earns_its_budget():
    """A full bucket at start let 3-h runs make 12 rescales against a budget of 9: the first scale-in waits."""
    settings = {"max_scaleout": 12, "max_rescales_per_hour": 1, "planner": "cost_aware"}
    controller = Controller(parse_config({"controller": settings}))
    load = 1000 + 400 * np.sin(np.arange(60) * np.pi / 10)
    first = controller.tick(window(60.0, load, 8, rng=np.random.default_rng(0)), 60.0)
    assert first.reason is Reason.SCALE_IN_RESCALE_BUDGET and first.target_scaleout == 8


def test_rescale_budget_off_never_holds():
    assert rescale_tokens([0.0] * 100, 1.0, per_hour=0.0) == math.inf


def test_only_applied_rescales_spend_the_budget():
    """A refused or failed rescale changed nothing: it takes no token."""
    settings = {"max_scaleout": 12, "max_rescales_per_hour": 1, "planner": "cost_aware"}  # its budget reason
    controller = Controller(parse_config({"controller": settings}))
    controller.conclude(Decision(-3600.0, 8, 8, Reason.SKIP_WARMUP))  # ticking for an hour: a full bucket of 1
    rng = np.random.default_rng(0)
    load = 1000 + 400 * np.sin(np.arange(60) * np.pi / 10)
    refused = controller.tick(window(60.0, load, 8, rng=rng), 60.0)
    assert refused.reason is Reason.SCALE_IN_SMALLEST_VALID
    controller.conclude(refused, Actuation(refused.target_scaleout, Outcome.REFUSED))
    again = controller.tick(window(120.0, load, 8, rng=rng), 120.0)
    assert again.reason is Reason.SCALE_IN_SMALLEST_VALID  # the bucket is still full
    step_applied = controller.conclude(again, Actuation(again.target_scaleout, Outcome.APPLIED))
    assert step_applied.rescale
    # back at 8 executors (as if overridden) an hour's budget of 1 is spent: the next scale-in waits for its token
    held = controller.tick(window(900.0, load, 8, rng=rng), 900.0)  # past the 600-s recent-rescale window
    assert held.reason is Reason.SCALE_IN_RESCALE_BUDGET and held.target_scaleout == 8
    assert held.evidence.cost_aware.rescale_tokens == pytest.approx((900.0 - 120.0) / 3600.0, abs=1e-3)  # rounded


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        pytest.param([], (0.0, 0.0), id="nothing-seen"),
        pytest.param([10.0, 20.0, 30.0], (30.0, 0.0), id="unbroken"),
        pytest.param([10.0, 20.0, 330.0, 340.0], (20.0, 300.0), id="after-a-5-min-gap"),
        pytest.param([10.0, 20.0, 330.0, 340.0, 940.0], (10.0, 590.0), id="the-latest-gap-counts"),
        pytest.param([10.0, 24.0, 38.0], (38.0, 0.0), id="a-step-late-within-half-a-step-is-no-gap"),
    ],
)
def test_seen_since_gap(times, expected):
    assert seen_since_gap([(t, 1.0) for t in times], step_s=10.0) == expected


def test_after_a_monitoring_gap_a_scale_in_waits_until_the_load_was_seen_as_long_as_it_was_not():
    controller = Controller(CONFIG)
    wave = 1000 + 400 * np.sin(np.arange(60) * np.pi / 10)
    busy = step(controller, window(60.0, wave + 2400, 8, rng=np.random.default_rng(0)), 60.0)
    assert busy.target_scaleout == 8
    # Ten minutes unseen, then the load a third of it: the scale-in waits until ten minutes are seen again.
    decisions = drive(controller, 12, workload=wave, scaleout=8, start=720.0)
    held = [d for d in decisions if d.reason is Reason.SCALE_IN_AFTER_GAP]
    assert held and all(d.target_scaleout == 8 for d in held), [d.reason for d in decisions]
    assert "went unseen for 600 s" in held[0].notes[-1]
    first_in = next(d for d in decisions if d.target_scaleout < d.current_scaleout)
    assert first_in.time_s >= 720.0 + 600.0 - 60.0 and first_in.reason is Reason.PLAN_SCALES_IN


def test_a_scale_in_waits_while_the_last_scale_out_is_still_recovering():
    controller = Controller(CONFIG)
    rng = np.random.default_rng(0)
    # 3,000/s on 4 executors of 500/s: behind, a scale-out; the gap between workload and throughput was 1,000/s.
    out = step(controller, window(60.0, 3000.0, 4, rng=rng), 60.0)
    assert out.reason is Reason.PLAN_SCALES_OUT
    # Then the load is a third of it and carried: the planner would scale in, but the gap's jump from its usual
    # 1,000/s never settles into a run of normal samples, so the scale-out has not recovered.
    after = [step(controller, window(t, 1000.0, out.target_scaleout, rng=rng), t) for t in range(120, 720, 60)]
    proposed = [d for d in after if d.reason is not Reason.COOLDOWN]
    held = [d for d in proposed if d.time_s - 60.0 < CONFIG.controller.target_recovery_s]
    assert held and all(d.reason is Reason.SCALE_IN_DURING_RECOVERY for d in held), [d.reason for d in after]
    assert all(d.target_scaleout == out.target_scaleout for d in held)
    assert f"the scale-out 4 -> {out.target_scaleout} of 180 s ago has not recovered yet" in held[0].notes[-1]
    # Once controller.target_recovery_s has passed, the recovery is late anyway: the scale-in goes ahead.
    went = after[-1]
    assert went.time_s - 60.0 >= CONFIG.controller.target_recovery_s
    assert went.reason is Reason.PLAN_SCALES_IN and went.target_scaleout < out.target_scaleout


def test_a_scale_in_after_a_scale_out_that_recovered_goes_ahead():
    controller = Controller(CONFIG)
    rng = np.random.default_rng(0)
    out = step(controller, window(60.0, 3000.0, 4, rng=rng), 60.0)
    after = []
    for t in range(120, 300, 60):
        controller.knowledge.recovery.pending = None  # measured to its end (the meter's own tests time it)
        after.append(step(controller, window(t, 1000.0, out.target_scaleout, rng=rng), t))
    assert [d.reason for d in after] == [Reason.COOLDOWN, Reason.COOLDOWN, Reason.PLAN_SCALES_IN]


def test_a_scale_out_is_not_measured_as_recovered_while_its_joining_executors_have_processed_nothing():
    """4 -> 7: a blip right after the request, then the old four carry the load while the new executors are listed
    with no records (registered, first tasks cold). The quiet stretch does not end the recovery; it ends once all
    seven process records."""
    controller, rng = Controller(CONFIG), np.random.default_rng(1)
    step(controller, window(60.0, 1500.0, 4, rng=rng), 60.0)
    controller.knowledge.last_rescale_s = 60.0
    pending = PendingRecovery(60.0, "out", 4, 7, predicted_recovery_s=60.0, downtime_used_s=30.0)
    controller.knowledge.recovery.start(pending)
    for t in (120.0, 180.0):
        obs = window(t, 1500.0, 4, rng=rng)
        blip = [0.0] * 3 if t == 120.0 else []
        warm = {
            w.executor_id: (blip + list(w.throughput_per_s[len(blip) :]), w.utilization_ratio) for w in obs.executors
        }
        cold = {f"exec-{i}": ([0.0] * 60, [1.0] * 60) for i in range(4, 7)}
        joined = Observation.of(time_s=t, workload_per_s=obs.workload_per_s, executors=warm | cold, uptime_s=1e6)
        assert step(controller, joined, t).target_scaleout == 7
    assert not controller.knowledge.recoveries and pending.anomaly_seen
    step(controller, window(240.0, 1500.0, 7, rng=rng), 240.0)
    assert [(r.to_scaleout, r.recovery_s) for r in controller.knowledge.recoveries] == [(7, 121.0)]
