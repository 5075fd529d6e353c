"""The actuator contract: what every implementation of the Execute port must do, run over each by a harness."""

from __future__ import annotations

from typing import Protocol

import pytest

from daedalus_spark.execute.port import Actuation, Actuator, ActuatorError, Outcome


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
