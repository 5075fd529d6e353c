"""The actuator contract: what every implementation of the Execute port must do, run over each by a harness; the
agent's harness (the real agent server before a fake driver)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pytest
from prometheus_client import CollectorRegistry

from daedalus_spark.agent.server import Routes, serve
from daedalus_spark.config import ActuatorConfig
from daedalus_spark.execute.agent import AgentActuator
from daedalus_spark.execute.port import Actuation, Actuator, ActuatorError, Outcome
from tests.conftest import FakeTime


class ActuatorHarness(Protocol):
    """A real or stand-in system behind one actuator, which the contract can inspect and break."""

    changes_the_job: bool  # False for the dry run
    max_target: int  # the system refuses targets above this

    def actuator(self) -> Actuator: ...

    def live(self) -> int:
        """Executors the system runs now (read behind the actuator's back)."""
        ...

    def break_connection(self) -> None:
        """Make the system unreachable (server stopped, API down)."""
        ...


TOKEN = "s3cret"


@dataclass
class FakeDriver:
    """Stands in for the driver behind the agent: executors join `join_polls` status reads after a target is set."""

    live: int = 2
    target: int | None = None
    join_polls: int = 0
    _polls_left: int = 0

    def status(self) -> dict[str, object]:
        if self.target is not None and self.live != self.target:
            if self._polls_left <= 0:
                self.live = self.target
            self._polls_left -= 1
        return {"current": self.live, "target": self.target}

    def apply(self, target: int) -> dict[str, object]:
        if target != self.target:
            self._polls_left = self.join_polls
        self.target = target
        return {"current": self.live, "target": target}


class AgentHarness:
    """The real agent HTTP server (`daedalus_spark.agent.server`) in front of a fake driver."""

    changes_the_job = True
    max_target = 8

    def __init__(self, driver: FakeDriver | None = None, **settings: float) -> None:
        self.driver = driver or FakeDriver()
        routes = Routes(CollectorRegistry(), self.driver.status, self.driver.apply, 1, self.max_target, TOKEN)
        self.server = serve(routes, "127.0.0.1", 0)
        self.time = FakeTime()
        defaults = {"timeout_s": 2.0, "retries": 2, "backoff_s": 0.5, "confirm_timeout_s": 30.0}
        self.settings = ActuatorConfig(
            agent_url=f"http://127.0.0.1:{self.server.server_port}", **{**defaults, **settings}
        )

    def actuator(self, token: str | None = TOKEN) -> AgentActuator:
        return AgentActuator(self.settings, token, sleep=self.time.sleep, monotonic=self.time.monotonic)

    def live(self) -> int:
        return self.driver.live

    def break_connection(self) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def check_apply_sets_an_absolute_target(h: ActuatorHarness) -> None:
    before = h.live()
    result = h.actuator().apply(before + 1)
    assert isinstance(result, Actuation) and result.target == before + 1
    if h.changes_the_job:  # accepted at once: the loop confirms on its next ticks, from current()
        assert result.outcome is Outcome.ACCEPTED and result.outcome.changed_the_job, result.detail
        assert h.actuator().current() == before + 1 and h.live() == before + 1
    else:
        assert result.outcome is Outcome.DRY_RUN and h.live() == before


def check_apply_is_idempotent(h: ActuatorHarness) -> None:
    target = h.live() + 1
    first, second = h.actuator().apply(target), h.actuator().apply(target)
    assert first.outcome is second.outcome
    h.actuator().current()  # executors join once the system is looked at
    assert h.live() == (target if h.changes_the_job else target - 1)


def check_a_refused_target_changes_nothing(h: ActuatorHarness) -> None:
    if not h.changes_the_job:
        pytest.skip("a dry run refuses nothing: it changes nothing")
    before = h.live()
    result = h.actuator().apply(h.max_target + 1)
    assert result.outcome is Outcome.REFUSED and result.detail
    assert h.live() == before


def check_an_unreachable_system_fails_without_raising(h: ActuatorHarness) -> None:
    if not h.changes_the_job:
        pytest.skip("a dry run reaches nothing")
    h.break_connection()
    result = h.actuator().apply(h.live() + 1)
    assert result.outcome is Outcome.FAILED and result.detail
    assert not result.outcome.changed_the_job
    with pytest.raises(ActuatorError):
        h.actuator().current()


CONTRACT = [
    check_apply_sets_an_absolute_target,
    check_apply_is_idempotent,
    check_a_refused_target_changes_nothing,
    check_an_unreachable_system_fails_without_raising,
]
