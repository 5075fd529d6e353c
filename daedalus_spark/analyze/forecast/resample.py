"""Analyze: the one resampler — workload samples of any step onto the forecast's fixed grid of absolute-time buckets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from daedalus_spark.analyze.forecast.models import MAX_STORED_VALUE
from daedalus_spark.untrusted import Damaged, field, integer, mapping, number

# Float tolerance when mapping sample times to bucket indices.
EPS = 1e-9


def start_index(t_s: float, resolution_s: float) -> int:
    """The bucket a sample starting at `t_s` starts in (bucket k covers [k, k + 1) x resolution)."""
    return math.floor(t_s / resolution_s + EPS)


def end_index(t_s: float, resolution_s: float) -> int:
    """One past the last bucket a sample ending at `t_s` reaches into: the index whose start is at or after it."""
    return math.ceil(t_s / resolution_s - EPS)


def window_means(
    values: Sequence[float], *, step_s: float, end_s: float, resolution_s: float
) -> list[tuple[float, float]]:
    """One window's samples (oldest first, one per `step_s`, the last ending at `end_s`) averaged per bucket they end
    in, each stamped with its bucket's end, oldest first; the latest bucket may be partial.

    The knowledge's workload history (the reports, the scale-in look-back) reads these per-window means; the
    forecaster's `Buckets` weights by the seconds covered and waits for a bucket to end. Both share the grid.
    """
    n = len(values)
    grouped: dict[float, list[float]] = {}
    for i, value in enumerate(values):
        grouped.setdefault(end_index(end_s - (n - 1 - i) * step_s, resolution_s) * resolution_s, []).append(value)
    return [(t, sum(samples) / len(samples)) for t, samples in sorted(grouped.items())]


class Buckets:
    """Turns samples of any step into fixed `resolution_s` buckets aligned to absolute time (partial kept)."""

    def __init__(self, resolution_s: float, *, max_gap_steps: int | None = None) -> None:
        self.resolution_s = resolution_s
        # Buckets further back than this are never used (the history keeps fewer); skipping them bounds the work
        # after a long outage or a damaged stored index.
        self.max_gap_steps = max_gap_steps
        self.next_index: int | None = None  # the first bucket not yet emitted
        self._sum: dict[int, float] = {}  # records per bucket (rate x covered seconds)
        self._covered_s: dict[int, float] = {}
        self._last_value = 0.0

    def add(self, values: Sequence[float], *, step_s: float, end_s: float) -> list[float]:
        """Add samples ending at `end_s`; return the buckets completed by them, oldest first."""
        n = len(values)
        for i, value in enumerate(values):
            self._spread(float(value), end_s - (n - i) * step_s, end_s - (n - i - 1) * step_s)
        return self._complete_until(end_s)

    def _spread(self, rate: float, t0: float, t1: float) -> None:
        res = self.resolution_s
        first = start_index(t0, res)
        if self.next_index is None:
            self.next_index = first
        for k in range(first, end_index(t1, res)):
            if k < self.next_index:
                continue  # already emitted: a late sample cannot change the past
            overlap = min(t1, (k + 1) * res) - max(t0, k * res)
            if overlap > 0:
                self._sum[k] = self._sum.get(k, 0.0) + rate * overlap
                self._covered_s[k] = self._covered_s.get(k, 0.0) + overlap

    def _complete_until(self, end_s: float) -> list[float]:
        if self.next_index is None:
            return []
        done: list[float] = []
        last_complete = start_index(end_s, self.resolution_s)  # buckets below this index have ended
        if self.max_gap_steps is not None and last_complete - self.next_index > self.max_gap_steps:
            self._skip_to(last_complete - self.max_gap_steps)
        elif self.max_gap_steps is not None and self.next_index - last_complete > self.max_gap_steps:
            # The stored position lies far ahead of the clock (another clock, or a damaged file): waiting for it
            # would stop the forecast from learning; start again here.
            self._sum.clear()
            self._covered_s.clear()
            self.next_index = last_complete
        for k in range(self.next_index, last_complete):
            covered = self._covered_s.pop(k, 0.0)
            total = self._sum.pop(k, 0.0)
            # A bucket with no sample at all (a monitoring gap) repeats the last level to keep the series regular.
            self._last_value = total / covered if covered > 0 else self._last_value
            done.append(self._last_value)
        self.next_index = max(self.next_index, last_complete)
        return done

    def _skip_to(self, index: int) -> None:
        for k in [k for k in self._sum if k < index]:
            self._sum.pop(k)
            self._covered_s.pop(k, None)
        self.next_index = index

    def to_json(self) -> dict[str, Any]:
        return {
            "next_index": self.next_index,
            "sum": [[k, v] for k, v in sorted(self._sum.items())],
            "covered_s": [[k, v] for k, v in sorted(self._covered_s.items())],
            "last_value": self._last_value,
        }

    def restore_json(self, raw: Any) -> None:
        raw = mapping(raw, "buckets")
        index = field(raw, "next_index", "buckets")
        limit = int(MAX_STORED_VALUE)
        self.next_index = None if index is None else integer(index, "buckets.next_index", lo=-limit, hi=limit)
        self._last_value = number(
            field(raw, "last_value", "buckets"), "buckets.last_value", lo=-MAX_STORED_VALUE, hi=MAX_STORED_VALUE
        )
        self._sum = self._partial(field(raw, "sum", "buckets"), "buckets.sum", -math.inf)
        self._covered_s = self._partial(field(raw, "covered_s", "buckets"), "buckets.covered_s", 0.0)
        if set(self._sum) != set(self._covered_s) or any(v > self.resolution_s + EPS for v in self._covered_s.values()):
            raise Damaged("buckets: partial sums and covered seconds do not match")
        if self._sum and (self.next_index is None or min(self._sum) < self.next_index):
            raise Damaged("buckets: a partial bucket before the next index")

    def _partial(self, raw: Any, where: str, lo: float) -> dict[int, float]:
        # Only the buckets still open are stored: a handful; a long list is not ours.
        if not isinstance(raw, list) or len(raw) > 1000:
            raise Damaged(f"{where}: expected a short list of [index, value] pairs")
        out: dict[int, float] = {}
        for i, pair in enumerate(raw):
            if not isinstance(pair, list) or len(pair) != 2:
                raise Damaged(f"{where}[{i}]: expected [index, value]")
            k = integer(pair[0], f"{where}[{i}][0]", lo=-int(MAX_STORED_VALUE), hi=int(MAX_STORED_VALUE))
            out[k] = number(pair[1], f"{where}[{i}][1]", lo=max(lo, -MAX_STORED_VALUE), hi=MAX_STORED_VALUE)
        return out
