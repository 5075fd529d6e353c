"""Monitor port: what every metrics source offers the loop — one Observation per window, or a reason it cannot."""

from __future__ import annotations

from typing import Protocol

from daedalus_spark.domain import Observation

# After monitor outages (or a clock stepped forward) the loop observes at most this many loop intervals back, so a
# source that keeps its own history (the scrape monitor) keeps at least that much.
MAX_WINDOW_INTERVALS = 5


class MonitorError(Exception):
    """The window cannot be observed; `kind` classifies it for counting, the message says what is missing.

    Kinds: `unreachable` (connection refused, DNS), `timeout`, `empty` (no series), `invalid` (NaN, negative,
    malformed), `partial` (fewer executors than the scale-out, gaps).
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class MetricsSource(Protocol):
    def observe(self, *, start_s: float, end_s: float) -> Observation:
        """Samples in (start_s, end_s], one per step, oldest first; raises MonitorError when that is impossible."""
        ...

    def close(self) -> None:
        """Release connections or threads (idempotent)."""
        ...
