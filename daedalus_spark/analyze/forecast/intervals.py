"""Analyze: forecast intervals — the upper margin per step ahead from a model's own recent errors, quantile-tracked."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from daedalus_spark.analyze.forecast.models import MAX_STORED_VALUE
from daedalus_spark.untrusted import Damaged, field, integer, mapping, number, numbers

# Empirical intervals: errors of this many recent forecasts per step ahead (30 one-minute ticks: the last half
# hour), and at least this many matured ones at every step before a margin is given at all.
_ERROR_ROWS, _MIN_ERRORS = 30, 5
# Quantile tracking (Angelopoulos, Candes and Tibshirani, "Conformal PID control", 2023): each step ahead's margin
# carries an offset that every matured bound moves by this gain x the step's mean absolute error x (missed - (1 -
# level asked)). Measured on the 6-h traces (docs/forecast.md): gain 0.5 / 1 / 2 covered 86.4 / 88.1 / 89.7 % of
# Traffic and 86.0 / 86.7 / 89.2 % of the sine at the 90 % level; moving the quantile's level instead stayed at
# 77-80 %, since no level of the last 30 errors covers a change that they never saw.
_TRACKING_GAIN = 2.0


def column_quantiles(values: np.ndarray, q: float) -> np.ndarray:
    """`np.nanquantile(values, q, axis=0)` (linear method, the same arithmetic to the last bit) for columns that each
    hold at least one finite value, in one sort: numpy's own goes column by column once a NaN is present (18 ms a
    tick for the 90 steps of the default horizon)."""
    ordered = np.sort(values, axis=0)  # NaN sorts last
    valid = np.sum(np.isfinite(values), axis=0)
    virtual = (valid - 1) * np.float64(q)
    below = np.floor(virtual)
    above = virtual >= valid - 1
    previous = np.where(above, valid - 1, below).astype(np.intp)
    following = np.where(above, valid - 1, below + 1).astype(np.intp)
    columns = np.arange(values.shape[1])
    a, b = ordered[previous, columns], ordered[following, columns]
    gamma = virtual - np.where(above, -1.0, below)
    difference = b - a
    result: np.ndarray = a + difference * gamma
    upper = gamma >= 0.5
    result[upper] = (b - difference * (1 - gamma))[upper]
    return result


def _column_nanmeans(values: np.ndarray) -> np.ndarray:
    """`np.nanmean(values, axis=0)` (the same reductions on the same arrays, to the last bit) without its checks and
    wrappers. It writes 0 into `values` where they are NaN."""
    missing = np.isnan(values)
    values[missing] = 0.0
    return np.add.reduce(values, axis=0) / np.add.reduce(~missing, axis=0, dtype=np.intp)  # type: ignore[no-any-return]


class HorizonErrors:
    """Errors (actual - forecast) of a model's recent forecasts, one row per forecast, one column per step ahead;
    nan until that bucket is observed. A quantile per column plus an offset per column widens the point forecast
    into an upper bound. The offset tracks the misses of the bounds given (quantile tracking): a quantile of the
    last 30 errors trails errors that change faster, and the offset makes up for it, so that the share of actuals
    above the bound approaches 1 - `level` (docs/forecast.md). It counts in the step's mean absolute error over
    those 30, so it shrinks with them once a burst of large errors has left the window."""

    def __init__(self, name: str, horizon_steps: int, level: float) -> None:
        self.name = name
        self.horizon_steps = horizon_steps
        self.level = level
        self.offsets = np.zeros(horizon_steps)
        self.errors = np.full((_ERROR_ROWS, horizon_steps), np.nan)
        # rows still maturing: (row, first bucket, values, the margin their bound had or None)
        self.open: list[tuple[int, int, np.ndarray, np.ndarray | None]] = []
        self.next_row = 0
        # margin(n) since the errors and offsets last changed: a tick asks for the same one when it remembers a
        # forecast and again when it issues it
        self._margins: dict[int, np.ndarray | None] = {}

    def remember(self, start: int, values: np.ndarray) -> None:
        """Keep a forecast (first bucket `start`) so its errors, and whether its bound held, are measured as its
        buckets arrive."""
        row = self.next_row
        self.next_row = (row + 1) % _ERROR_ROWS
        self.open = [r for r in self.open if r[0] != row and r[1] != start]  # one forecast per first bucket
        self.errors[row, :] = np.nan
        self._margins.clear()
        kept = np.asarray(values[: self.horizon_steps], dtype=float).copy()
        self.open.append((row, start, kept, self.margin(len(kept))))

    def forecast_from(self, start: int) -> np.ndarray | None:
        return next((v for _, st, v, _ in self.open if st == start), None)

    def observe(self, first: int, actual: np.ndarray) -> None:
        """Record the errors of the open forecasts on the buckets from `first` on, and move the offsets of those that
        issued a bound by whether it held."""
        self._margins.clear()
        reached = []  # (row, its steps the buckets reach, their errors, the bound issued or None), oldest first
        for row, start, values, issued in self.open:
            lo, hi = max(first, start), min(first + len(actual), start + len(values))
            if lo < hi:
                steps = slice(lo - start, hi - start)
                reached.append((row, steps, actual[lo - first : hi - first] - values[steps], issued))
        self.open = [r for r in self.open if first + len(actual) < r[1] + len(r[2])]
        for row, steps, errors, _ in reached:
            self.errors[row, steps] = errors
        tracked = [
            (steps, errors > issued[steps], 1 + (self.next_row - 1 - row) % _ERROR_ROWS)
            for row, steps, errors, issued in reached
            if issued is not None
        ]
        if tracked:  # oldest forecast first, a step may be moved by several
            columns = np.concatenate([np.arange(steps.start, steps.stop) for steps, _, _ in tracked])
            missed = np.concatenate([m for _, m, _ in tracked]).astype(float)
            delay = np.concatenate([np.full(len(m), d, dtype=float) for _, m, d in tracked])
            np.add.at(self.offsets, columns, _TRACKING_GAIN / delay * (missed - (1.0 - self.level)))

    def margin(self, n_steps: int) -> np.ndarray | None:
        """The `level` quantile of the errors plus the tracked offset times their mean size, at each of `n_steps`
        steps (never below 0); None until every step has `_MIN_ERRORS` matured errors (no margin rather than an
        invented one)."""
        if n_steps not in self._margins:
            self._margins[n_steps] = self._margin(n_steps)
        margin = self._margins[n_steps]
        return None if margin is None else margin.copy()

    def _margin(self, n_steps: int) -> np.ndarray | None:
        if n_steps <= 0:
            return None
        steps = np.minimum(np.arange(n_steps), self.horizon_steps - 1)
        if int(np.min(np.sum(np.isfinite(self.errors), axis=0)[steps])) < _MIN_ERRORS:
            return None
        # Only the columns asked for: each has matured errors, so no all-nan slice (and no warning) is possible.
        recent = self.errors[:, : int(steps[-1]) + 1]
        scale = _column_nanmeans(np.abs(recent, order="C"))
        margin = column_quantiles(recent, self.level)[steps] + self.offsets[steps] * scale[steps]
        return np.maximum(margin, 0.0) if np.all(np.isfinite(margin)) else None

    def to_json(self) -> dict[str, Any]:
        return {
            "errors": [[None if math.isnan(v) else float(v) for v in row] for row in self.errors],
            "open": [
                [row, start, [float(v) for v in values], None if issued is None else [float(v) for v in issued]]
                for row, start, values, issued in self.open
            ],
            "next_row": self.next_row,
            "offset_scales": [float(v) for v in self.offsets],
        }

    def restore_json(self, raw: Any) -> None:
        where, big = f"forecaster.{self.name}", MAX_STORED_VALUE
        raw = mapping(raw, where)
        rows = field(raw, "errors", where)
        if not isinstance(rows, list) or len(rows) != _ERROR_ROWS:
            raise Damaged(f"{where}.errors: expected {_ERROR_ROWS} rows")
        errors = np.full((_ERROR_ROWS, self.horizon_steps), np.nan)
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != self.horizon_steps:
                raise Damaged(f"{where}.errors[{i}]: expected {self.horizon_steps} values (another horizon_s?)")
            errors[i] = [math.nan if v is None else number(v, f"{where}.errors[{i}]", lo=-big, hi=big) for v in row]
        open_rows = field(raw, "open", where)
        if not isinstance(open_rows, list) or len(open_rows) > _ERROR_ROWS:
            raise Damaged(f"{where}.open: expected at most {_ERROR_ROWS} rows")
        restored: list[tuple[int, int, np.ndarray, np.ndarray | None]] = []
        for i, item in enumerate(open_rows):
            if not isinstance(item, list) or len(item) not in (3, 4):  # 3: stored before the bounds were checked
                raise Damaged(f"{where}.open[{i}]: expected [row, start, values, margin]")
            row = integer(item[0], f"{where}.open[{i}][0]", lo=0, hi=_ERROR_ROWS - 1)
            start = integer(item[1], f"{where}.open[{i}][1]", lo=-int(big), hi=int(big))
            values = numbers(item[2], f"{where}.open[{i}][2]", max_len=self.horizon_steps, lo=0.0, hi=big)
            issued = None
            if len(item) == 4 and item[3] is not None:
                margin = numbers(item[3], f"{where}.open[{i}][3]", max_len=len(values), lo=0.0, hi=big)
                if len(margin) != len(values):
                    raise Damaged(f"{where}.open[{i}][3]: expected {len(values)} margins, one per value")
                issued = np.asarray(margin, dtype=float)
            restored.append((row, start, np.asarray(values, dtype=float), issued))
        offsets = np.zeros(self.horizon_steps)  # none stored before the bounds were tracked
        for key in ("offset_scales", "offsets"):  # offsets: in records/s, stored before they were in error sizes
            if key in raw:
                stored = numbers(raw[key], f"{where}.{key}", max_len=self.horizon_steps, lo=-big, hi=big)
                if len(stored) != self.horizon_steps:
                    raise Damaged(f"{where}.{key}: expected {self.horizon_steps} offsets (another horizon_s?)")
                offsets = np.asarray(stored, dtype=float)
                if key == "offsets":
                    with np.errstate(invalid="ignore", divide="ignore"):
                        offsets = np.nan_to_num(offsets / _column_nanmeans(np.abs(errors)), posinf=0.0, neginf=0.0)
                break
        self.errors, self.open, self.offsets = errors, restored, offsets
        self._margins.clear()
        self.next_row = integer(field(raw, "next_row", where), f"{where}.next_row", lo=0, hi=_ERROR_ROWS - 1)
