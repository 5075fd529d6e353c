"""Execute: the dry-run actuator — advisor mode records what it would set and never touches the job."""

from __future__ import annotations

from dataclasses import dataclass, field

from daedalus_spark.execute.port import Actuation, Outcome


@dataclass
class DryRunActuator:
    """Reports the scale-out it is told the job has; every apply is a dry run (the job keeps its scale-out)."""

    live: int = 1
    requested: list[int] = field(default_factory=list)

    def current(self) -> int:
        return self.live

    def apply(self, target: int) -> Actuation:
        self.requested.append(target)
        return Actuation(target, Outcome.DRY_RUN, f"dry run: would set {target} executors", live=self.live)
