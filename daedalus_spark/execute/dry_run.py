"""Execute: the dry-run actuator — advisor mode records what it would set and never touches the job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from daedalus_spark.execute.port import Actuation, ActuatorError, Outcome


@dataclass
class DryRunActuator:
    """Every apply is a dry run (the job keeps its scale-out). The live count it reports is `live` when given (the
    simulator's), else what `read_live` reads from the job without changing it (`--dry-run` beside an agent), else
    unknown: never a made-up number."""

    live: int | None = None
    read_live: Callable[[], int] | None = None
    requested: list[int] = field(default_factory=list)

    def current(self) -> int:
        if self.live is not None:
            return self.live
        if self.read_live is None:
            raise ActuatorError("dry run: no actuator to read the live executors from (the monitor's count is used)")
        return self.read_live()

    def apply(self, target: int) -> Actuation:
        self.requested.append(target)
        try:
            live: int | None = self.current()
        except ActuatorError:
            live = None
        return Actuation(target, Outcome.DRY_RUN, f"dry run: would set {target} executors", live=live)
