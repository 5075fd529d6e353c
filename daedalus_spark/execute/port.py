"""Execute port: set an absolute scale-out and say what happened — applied, unconfirmed, refused, failed, dry run."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Outcome(StrEnum):
    APPLIED = "applied"  # the job runs the target scale-out
    UNCONFIRMED = "unconfirmed"  # the target was accepted, but the live count had not reached it in time
    REFUSED = "refused"  # the actuator said no (out of bounds, forbidden); nothing changed
    FAILED = "failed"  # could not reach the actuator or it erred; nothing known to have changed
    DRY_RUN = "dry_run"  # advisor mode: decided, not actuated

    @property
    def changed_the_job(self) -> bool:
        """Whether the job was disturbed, so the rescale counts (cool-down, recovery measurement)."""
        return self in (Outcome.APPLIED, Outcome.UNCONFIRMED)


@dataclass(frozen=True)
class Actuation:
    target: int
    outcome: Outcome
    detail: str = ""  # for people: what the actuator saw or why it refused
    live: int | None = None  # live workers when the actuator last looked
    duration_s: float = 0.0


class ActuatorError(Exception):
    """The current scale-out cannot be read."""


class Actuator(Protocol):
    def current(self) -> int:
        """Live workers now; raises ActuatorError when they cannot be counted."""
        ...

    def apply(self, target: int) -> Actuation:
        """Set the absolute target (idempotent); never raises, the outcome says what happened."""
        ...
