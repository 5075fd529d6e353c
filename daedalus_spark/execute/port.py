"""Execute port: set an absolute scale-out and say what happened — applied, unconfirmed, refused, failed, ...."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from daedalus_spark.config import ActuatorConfig
from daedalus_spark.domain import Outcome as Outcome  # a domain value (a decision records it), re-exported


@dataclass(frozen=True)
class Actuation:
    target: int
    outcome: Outcome
    detail: str = ""  # for people: what the actuator saw or why it refused
    live: int | None = None  # live executors when the actuator last looked
    duration_s: float = 0.0


class ActuatorError(Exception):
    """The current scale-out cannot be read."""


class Actuator(Protocol):
    def current(self) -> int:
        """Live executors now; raises ActuatorError when they cannot be counted."""
        ...

    def apply(self, target: int) -> Actuation:
        """Set the absolute target (idempotent); never raises, the outcome says what happened."""
        ...


def confirm_target(
    target: int,
    read_live: Callable[[], int | None],
    *,
    started: float,
    settings: ActuatorConfig,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
    applied: str,
    unconfirmed: str,
) -> Actuation:
    """After a target was set: poll the live count until it reaches the target (applied) or `confirm_timeout_s` runs
    out (unconfirmed: the job was disturbed either way). `read_live` gives None for a missed poll, which is no
    verdict: the deadline decides. The detail templates take {live}, {target} and {elapsed}."""
    deadline = started + settings.confirm_timeout_s
    while True:
        live = read_live()
        elapsed = monotonic() - started
        if live == target:
            return Actuation(
                target, Outcome.APPLIED, applied.format(live=live, target=target, elapsed=elapsed), live, elapsed
            )
        if monotonic() >= deadline:
            seen = "unknown" if live is None else str(live)
            detail = unconfirmed.format(live=seen, target=target, elapsed=elapsed)
            return Actuation(
                target,
                Outcome.UNCONFIRMED,
                f"{detail} (confirm_timeout_s {settings.confirm_timeout_s:g})",
                live,
                elapsed,
            )
        sleep(settings.confirm_poll_s)
