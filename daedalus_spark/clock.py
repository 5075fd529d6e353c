"""Edge support: the one injected clock (system for real runs, fake for tests and the simulator)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since an arbitrary, fixed epoch."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that only moves when told to; never sleeps."""

    def __init__(self, start_s: float = 0.0) -> None:
        self._now = float(start_s)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds
        return self._now

    def set(self, now_s: float) -> None:
        if now_s < self._now:
            raise ValueError(f"a clock cannot go back (from {self._now} to {now_s})")
        self._now = float(now_s)
