"""Knowledge of time: the one clock the loop owns, real for the sidecar and fake (advanced by hand) for tests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (or any fixed origin the loop agrees on)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


@dataclass
class FakeClock:
    """A clock that moves only when told to; tests and the simulator use it instead of sleeping."""

    t: float = 0.0

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t
