"""Every actuator keeps the Execute contract: the agent's over real HTTP, the dry run, the simulator's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from daedalus_spark.agent.targets import TargetError
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.execute.port import Outcome, PendingTarget
from tests.contract.actuator_contract import CONTRACT, AgentHarness, FakeDriver


class DryRunHarness:
    changes_the_job = False
    max_target = 8

    def __init__(self) -> None:
        self._actuator = DryRunActuator(live=2)

    def actuator(self) -> DryRunActuator:
        return self._actuator

    def live(self) -> int:
        return self._actuator.live

    def break_connection(self) -> None:
        return None


@pytest.fixture
def agent() -> Iterator[AgentHarness]:
    harness = AgentHarness()
    yield harness
    harness.stop()


HARNESSES = {"agent": AgentHarness, "dry_run": DryRunHarness}


@pytest.mark.parametrize("kind", sorted(HARNESSES))
@pytest.mark.parametrize("check", CONTRACT, ids=lambda c: c.__name__.removeprefix("check_"))
def test_actuator_contract(kind, check):
    harness = HARNESSES[kind]()
    try:
        check(harness)
    finally:
        if isinstance(harness, AgentHarness):
            harness.stop()


def test_agent_accepts_at_once_then_the_next_ticks_see_joining_executors():
    harness = AgentHarness(FakeDriver(live=2, join_polls=3))
    try:
        actuator = harness.actuator()
        result = actuator.apply(4)
        pending = PendingTarget(4, accepted_s=0.0, timeout_s=90.0)
        verdicts = [pending.verdict(actuator.current(), now_s=20.0 * tick) for tick in (1, 2, 3, 4)]
    finally:
        harness.stop()
    assert result.outcome is Outcome.ACCEPTED and result.live == 2 and harness.time.sleeps == []  # no waiting
    assert verdicts[:3] == [None, None, None]  # three ticks saw 2 executors, the fourth saw 4
    assert verdicts[3] is not None and verdicts[3].outcome is Outcome.APPLIED
    assert verdicts[3].live == 4 and verdicts[3].duration_s == pytest.approx(80.0)


def test_agent_target_not_reached_in_time_is_unconfirmed_but_counts_as_a_change():
    harness = AgentHarness(FakeDriver(live=2, join_polls=100))
    try:
        actuator = harness.actuator()
        accepted = actuator.apply(5)
        pending = PendingTarget(5, accepted_s=0.0, timeout_s=60.0)
        early, late = (pending.verdict(actuator.current(), now_s=t) for t in (30.0, 60.0))
    finally:
        harness.stop()
    assert accepted.outcome.changed_the_job and early is None
    assert late is not None and late.outcome is Outcome.UNCONFIRMED and late.outcome.changed_the_job
    assert "2 executors live after 60 s (confirm_timeout_s 60)" in late.detail and late.live == 2


def test_agent_wrong_token_is_refused_not_retried(agent):
    result = agent.actuator(token="wrong").apply(3)
    assert result.outcome is Outcome.REFUSED and "401" in result.detail
    assert agent.time.sleeps == [] and agent.driver.target is None


def test_agent_unreachable_retries_with_doubling_backoff_then_fails():
    harness = AgentHarness(retries=3, backoff_s=0.5)
    harness.stop()
    result = harness.actuator().apply(3)
    assert result.outcome is Outcome.FAILED
    assert harness.time.sleeps == [0.5, 1.0]  # three attempts, two waits


def test_agent_driver_error_is_retried_then_reported_failed():
    class Failing(FakeDriver):
        def apply(self, target: int) -> dict[str, object]:
            raise TargetError("driver said no")  # the agent answers 503 to any exception of the driver

    harness = AgentHarness(Failing(), retries=2, backoff_s=1.0)
    try:
        result = harness.actuator().apply(3)
    finally:
        harness.stop()
    assert result.outcome is Outcome.FAILED and "503" in result.detail
    assert harness.time.sleeps == [1.0]
