"""Tuning (pure core): the history's contiguous stretches cut into windows, the newest held out for the report."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from daedalus_spark.tune.grid import SplitSettings

SELECT = "select"
HOLDOUT = "holdout"


class HistoryError(ValueError):
    """A history that cannot be tuned on (empty, too short, too gapped, unreachable); one line saying why."""


@dataclass(frozen=True)
class Window:
    """Seconds [start_s, end_s) scored in one simulation, which runs from `lead_start_s` (unscored lead-in)."""

    index: int
    part: str  # SELECT or HOLDOUT
    lead_start_s: int
    start_s: int
    end_s: int

    @property
    def seconds(self) -> int:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Plan:
    windows: tuple[Window, ...]
    holdout_start_s: int  # the boundary: scored seconds at or after it are held out
    dropped: tuple[tuple[int, int], ...]  # stretches too short to simulate, (start, end)

    def part(self, name: str) -> list[Window]:
        return [w for w in self.windows if w.part == name]


def holdout_boundary(stretches: list[tuple[int, int]], holdout_s: int) -> int:
    """The time after which the stretches hold `holdout_s` seconds (walking back from the newest)."""
    remaining = holdout_s
    for start, end in reversed(stretches):
        if end - start >= remaining:
            return end - remaining
        remaining -= end - start
    return stretches[0][0] if stretches else 0


def _pieces(start: int, end: int, window_s: int) -> list[tuple[int, int]]:
    """[start, end) in equal pieces of at most window_s seconds."""
    count = max(1, math.ceil((end - start) / window_s))
    bounds = [start + (end - start) * i // count for i in range(count + 1)]
    return list(itertools.pairwise(bounds))


def plan_windows(stretches: list[tuple[int, int]], settings: SplitSettings) -> Plan:
    """Windows of both parts over the contiguous stretches [start, end) (sorted, not overlapping). The held-out
    part is the newest min(holdout_s, holdout_max_ratio x usable) seconds; each part's stretches are cut into equal
    windows of at most window_s; stretches shorter than min_window_s are dropped; a lead-in never crosses a gap."""
    min_s = math.ceil(settings.min_window_s)
    usable = [(s, e) for s, e in stretches if e - s >= min_s]
    dropped = tuple((s, e) for s, e in stretches if e - s < min_s)
    total = sum(e - s for s, e in usable)
    holdout_s = min(math.floor(settings.holdout_s), math.floor(total * settings.holdout_max_ratio))
    boundary = holdout_boundary(usable, holdout_s)
    windows: list[Window] = []
    short: list[tuple[int, int]] = []
    for s, e in usable:
        for part, lo, hi in ((SELECT, s, min(e, boundary)), (HOLDOUT, max(s, boundary), e)):
            if hi - lo < min_s:
                if hi > lo:
                    short.append((lo, hi))
                continue
            for a, b in _pieces(lo, hi, math.floor(settings.window_s)):
                lead = max(s, a - math.floor(settings.lead_in_s))
                windows.append(Window(len(windows), part, lead, a, b))
    plan = Plan(tuple(windows), boundary, tuple(sorted(dropped + tuple(short))))
    for part in (SELECT, HOLDOUT):
        if not plan.part(part):
            raise HistoryError(
                f"history: {total} usable s in stretches of at least {min_s} s leave no {part} window (the "
                f"newest {holdout_s} s are held out); a longer --since or trace, or a smaller split.min_window_s"
            )
    return plan
