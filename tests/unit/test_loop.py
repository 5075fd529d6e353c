"""The loop step: a rescale counts only when applied; monitor errors skip without actuating; every step is saved."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Reason
from daedalus_spark.execute.port import Actuation, ActuatorError, Outcome
from daedalus_spark.knowledge.state import InMemoryKnowledgeStore
from daedalus_spark.loop import Loop
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.testing import CONFIG, Recorder, ScriptedActuator, ScriptedMonitor


def make_loop(monitor=None, actuator=None):
    clock = FakeClock(60.0)
    recorder = Recorder()
    loop = Loop(
        Controller(CONFIG),
        monitor or ScriptedMonitor(),
        actuator or ScriptedActuator(),
        InMemoryKnowledgeStore(),
        clock,
        publishers=[recorder],
    )
    return loop, clock, recorder


@pytest.mark.parametrize(
    "outcome,counts",
    [
        pytest.param(Outcome.ACCEPTED, True, id="accepted-counts-before-it-is-confirmed"),
        pytest.param(Outcome.APPLIED, True, id="applied"),
        pytest.param(Outcome.UNCONFIRMED, True, id="unconfirmed-still-disturbed-the-job"),
        pytest.param(Outcome.REFUSED, False, id="refused"),
        pytest.param(Outcome.FAILED, False, id="failed"),
        pytest.param(Outcome.DRY_RUN, False, id="dry-run"),
    ],
)
def test_a_rescale_counts_only_when_it_changed_the_job(outcome, counts):
    actuator = ScriptedActuator(outcome)
    loop, _, recorder = make_loop(actuator=actuator)
    result = loop.step()
    decision, k = result.decision, loop.controller.knowledge
    assert decision.reason is Reason.PLAN_SCALES_OUT and actuator.requested == [decision.target_scaleout]
    assert decision.actuation == Actuation(decision.target_scaleout, outcome, f"scripted {outcome.value}")
    assert result.actuation is decision.actuation  # one record of the outcome
    assert (k.last_rescale_s == 60.0) is counts
    assert (k.recovery.pending is not None) is counts
    assert list(k.decisions) == [decision] and recorder.results == [result]


def test_after_a_failed_rescale_the_next_tick_tries_again_without_cooldown():
    actuator = ScriptedActuator(Outcome.FAILED)
    loop, clock, _ = make_loop(actuator=actuator)
    loop.step()
    clock.advance(60)
    second = loop.step()
    assert second.decision.reason is Reason.PLAN_SCALES_OUT
    assert len(actuator.requested) == 2


def test_after_an_applied_rescale_the_next_tick_cools_down():
    loop, clock, _ = make_loop()
    loop.step()
    clock.advance(60)
    assert loop.step().decision.reason is Reason.COOLDOWN


@pytest.mark.parametrize("kind", ["unreachable", "timeout", "empty", "invalid", "partial"])
def test_monitor_errors_skip_with_a_reason_and_never_actuate(kind):
    monitor = ScriptedMonitor()
    actuator = ScriptedActuator()
    loop, clock, _ = make_loop(monitor, actuator)
    loop.step()  # one good tick: the scale-out is known
    clock.advance(300)
    monitor.fail_with = MonitorError(kind, f"prometheus said {kind}")
    result = loop.step()
    d = result.decision
    assert d.reason is Reason.SKIP_MISSING_DATA and not d.rescale and d.actuation is None
    assert d.evidence.fields() == {"problem": f"prometheus said {kind}", "monitor_error": kind}
    assert d.current_scaleout == 4 and result.monitor_error is monitor.fail_with
    assert len(actuator.requested) == 1  # only the good tick's rescale


def test_windows_follow_each_other_and_an_outage_is_bounded():
    monitor = ScriptedMonitor()
    loop, clock, _ = make_loop(monitor)
    loop.step()
    clock.advance(60)
    loop.step()
    monitor.fail_with = MonitorError("unreachable", "down")
    for _ in range(10):
        clock.advance(60)
        loop.step()
    monitor.fail_with = None
    clock.advance(60)
    loop.step()
    assert monitor.windows[0] == (0.0, 60.0) and monitor.windows[1] == (60.0, 120.0)
    assert monitor.windows[-1] == (780.0 - 5 * 60, 780.0)  # not back to the last good end at 120 s


def test_every_step_is_saved_and_a_resumed_controller_has_the_same_knowledge():
    loop, clock, _ = make_loop()
    for _ in range(3):
        loop.step()
        clock.advance(60)
    resumed = Controller.resume(CONFIG, loop.store)
    assert list(resumed.knowledge.decisions) == list(loop.controller.knowledge.decisions)
    assert resumed.knowledge.last_rescale_s == loop.controller.knowledge.last_rescale_s


def test_an_actuator_that_raises_is_reported_failed():
    class Raising(ScriptedActuator):
        def apply(self, target: int) -> Actuation:
            raise RuntimeError("bug")

    loop, _, _ = make_loop(actuator=Raising())
    d = loop.step().decision
    assert d.actuation is not None and d.actuation.outcome is Outcome.FAILED and "bug" in d.actuation.detail
    assert loop.controller.knowledge.last_rescale_s is None


# ------------------------------------------------------------------ confirmation on the next ticks


@dataclass
class AcceptingActuator:
    """Accepts every target at once; the job then runs `live` executors (set by the test), or cannot be read."""

    live: int | None = 4
    blocked_by: str = ""  # an obstacle, as PendingAwareActuator reports stuck pods
    requested: list[int] = field(default_factory=list)

    def current(self) -> int:
        if self.live is None:
            raise ActuatorError("agent unreachable")
        return self.live

    def apply(self, target: int) -> Actuation:
        self.requested.append(target)
        return Actuation(target, Outcome.ACCEPTED, f"target {target} set", self.live)

    def obstacle(self, target: int) -> str:
        return self.blocked_by


def test_an_accepted_rescale_counts_at_once_and_is_confirmed_on_a_later_tick():
    actuator = AcceptingActuator()
    loop, clock, recorder = make_loop(actuator=actuator)
    first = loop.step()
    target, k = first.decision.target_scaleout, loop.controller.knowledge
    assert first.actuation is not None and first.actuation.outcome is Outcome.ACCEPTED and first.confirmation is None
    assert k.last_rescale_s == 60.0 and k.recovery.pending is not None  # cool-down and recovery start at once
    clock.advance(60)
    assert loop.step().confirmation is None  # executors still starting: no verdict, no wait
    actuator.live = target
    clock.advance(60)
    third = loop.step()
    assert third.confirmation is not None and third.confirmation.outcome is Outcome.APPLIED
    assert third.confirmation.live == target and third.confirmation.duration_s == pytest.approx(120.0)
    assert third.decision.actuation is None and "confirm" in third.timings_s
    assert [r.decision.reason for r in recorder.results][1:] == [Reason.COOLDOWN] * 2


def test_a_target_not_live_within_the_confirm_timeout_is_unconfirmed():
    loop, clock, _ = make_loop(actuator=AcceptingActuator(live=4))  # actuator.confirm_timeout_s: 90
    loop.step()
    clock.advance(60)
    assert loop.step().confirmation is None
    clock.advance(60)
    late = loop.step().confirmation
    assert late is not None and late.outcome is Outcome.UNCONFIRMED and late.live == 4
    assert "but 4 executors live after 120 s (confirm_timeout_s 90)" in late.detail


def test_an_obstacle_makes_the_target_unconfirmed_before_the_timeout():
    actuator = AcceptingActuator(live=4)
    loop, clock, _ = make_loop(actuator=actuator)
    loop.step()
    actuator.blocked_by = "target unreachable: 2 executor pod(s) Pending longer than 120 s"
    clock.advance(30)
    verdict = loop.step().confirmation
    assert verdict is not None and verdict.outcome is Outcome.UNCONFIRMED and "Pending" in verdict.detail


def test_an_unreadable_actuator_is_confirmed_from_the_monitors_scaleout():
    actuator = AcceptingActuator(live=4)
    monitor = ScriptedMonitor()
    loop, clock, _ = make_loop(monitor, actuator)
    target = loop.step().decision.target_scaleout
    actuator.live, monitor.scaleout = None, target
    clock.advance(60)
    verdict = loop.step().confirmation
    assert verdict is not None and verdict.outcome is Outcome.APPLIED and verdict.live == target


def test_a_new_target_supersedes_one_still_pending():
    config = CONFIG.model_copy(update={"controller": CONFIG.controller.model_copy(update={"cooldown_s": 0.0})})
    monitor, actuator = ScriptedMonitor(), AcceptingActuator(live=4)
    loop = Loop(Controller(config), monitor, actuator, InMemoryKnowledgeStore(), FakeClock(60.0))
    first = loop.step().decision.target_scaleout
    monitor.workload_per_s = 4500.0
    loop.clock.advance(60)  # type: ignore[attr-defined]
    second = loop.step()
    assert second.actuation is not None and second.actuation.outcome is Outcome.ACCEPTED
    assert second.decision.target_scaleout != first
    assert second.confirmation is not None and second.confirmation.outcome is Outcome.UNCONFIRMED
    assert second.confirmation.target == first and "superseded" in second.confirmation.detail
