"""Execute port: set an absolute scale-out and say what happened — accepted, refused, failed, ...; then, on the loop's
next ticks, whether the live count reached it (applied) or not in time (unconfirmed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Domain values (a decision records the actuation), re-exported for the actuators.
from daedalus_spark.domain import Actuation as Actuation
from daedalus_spark.domain import Outcome as Outcome


class ActuatorError(Exception):
    """The current scale-out cannot be read."""


class Actuator(Protocol):
    def current(self) -> int:
        """Live executors now; raises ActuatorError when they cannot be counted."""
        ...

    def apply(self, target: int) -> Actuation:
        """Set the absolute target (idempotent) and return at once (accepted: the loop confirms it on its next ticks);
        never raises, the outcome says what happened."""
        ...


@runtime_checkable
class SeesObstacles(Protocol):
    """An actuator that can tell, while a target is being confirmed, that it cannot be reached (pods stuck Pending)."""

    def obstacle(self, target: int) -> str:
        """Why `target` cannot be reached now; empty when nothing is known to stand in the way."""
        ...


@runtime_checkable
class SeesLostExecutors(Protocol):
    """An actuator that knows executors whose series say nothing about capacity (pods evicted, on a lost node, or
    that never ran)."""

    def lost_executors(self) -> Mapping[str, str]:
        """Executor id -> why its series is left out ('evicted: …', 'never ran'); empty when none is known."""
        ...


@dataclass(frozen=True)
class PendingTarget:
    """A target the actuator accepted, confirmed on the loop's next ticks from the live count (the way the Flink
    autoscaler measures a restart on its next run): the tick that set it never waits for executors to start."""

    target: int
    accepted_s: float
    timeout_s: float  # actuator.confirm_timeout_s

    def verdict(self, live: int | None, now_s: float, obstacle: str = "") -> Actuation | None:
        """Applied once `live` is the target; unconfirmed when something stands in the way or `timeout_s` has run
        out; None: look again next tick. `live` None (not readable now) is no verdict: the deadline decides."""
        elapsed = now_s - self.accepted_s
        if live == self.target:
            return Actuation(
                self.target, Outcome.APPLIED, f"{live} executors live after {elapsed:.0f} s", live, elapsed
            )
        seen = "unknown" if live is None else str(live)
        if obstacle:
            detail = f"target {self.target} accepted, {seen} executors live after {elapsed:.0f} s: {obstacle}"
            return Actuation(self.target, Outcome.UNCONFIRMED, detail, live, elapsed)
        if elapsed >= self.timeout_s:
            detail = (
                f"target {self.target} accepted, but {seen} executors live after {elapsed:.0f} s "
                f"(confirm_timeout_s {self.timeout_s:g})"
            )
            return Actuation(self.target, Outcome.UNCONFIRMED, detail, live, elapsed)
        return None

    def superseded(self, by: int, now_s: float) -> Actuation:
        """A newer target replaced this one before it was seen live."""
        elapsed = now_s - self.accepted_s
        detail = f"target {self.target} superseded by {by} after {elapsed:.0f} s, before it was seen live"
        return Actuation(self.target, Outcome.UNCONFIRMED, detail, None, elapsed)
