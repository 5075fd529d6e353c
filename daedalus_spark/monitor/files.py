"""Monitor (offline): read workload traces and per-worker metric CSVs exported from Grafana or Prometheus."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class InputFileError(ValueError):
    """A malformed input file; the message names the file and the line."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


def _read_lines(path: str | Path) -> list[str]:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    # CR, LF and CRLF line ends all occur in the bundled traces.
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def read_trace(path: str | Path) -> np.ndarray:
    """A `second|count` workload trace as records/s per second (index = second from the start).

    A header line is optional; seconds must start anywhere but then increase by exactly one.
    """
    counts: list[float] = []
    expected_second: int | None = None
    for number, line in enumerate(_read_lines(path), start=1):
        line = line.strip()
        if not line:
            continue
        fields = line.split("|")
        if len(fields) != 2:
            raise InputFileError(path, number, f"expected 'second|count', got {line[:60]!r}")
        try:
            second, count = int(fields[0]), float(fields[1])
        except ValueError:
            if not counts and expected_second is None:
                expected_second = -1  # a header line, tolerated once at the top
                continue
            raise InputFileError(path, number, f"expected two numbers 'second|count', got {line[:60]!r}") from None
        if not math.isfinite(count) or count < 0:
            raise InputFileError(path, number, f"count must be a finite number >= 0, got {fields[1]!r}")
        if expected_second not in (None, -1) and second != expected_second:
            raise InputFileError(path, number, f"second {second} out of order (expected {expected_second})")
        expected_second = second + 1
        counts.append(count)
    if not counts:
        raise InputFileError(path, None, "no data rows")
    return np.asarray(counts, dtype=float)


@dataclass(frozen=True)
class MetricTable:
    """A wide metrics CSV: a time column and one column per series (e.g. per worker)."""

    times: tuple[str, ...]
    columns: dict[str, np.ndarray]


def read_metric_csv(path: str | Path) -> MetricTable:
    """A CSV with a time column first and one numeric column per series; empty cells become NaN."""
    lines = [ln for ln in _read_lines(path)]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows or len(rows[0]) < 2:
        raise InputFileError(path, 1, "expected a header with a time column and at least one series column")
    header = [h.strip() for h in rows[0]]
    names = header[1:]
    if len(set(names)) != len(names):
        raise InputFileError(path, 1, "duplicate column names in the header")
    times: list[str] = []
    values: list[list[float]] = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputFileError(path, number, f"expected {len(header)} fields, got {len(row)}")
        parsed = []
        for name, cell in zip(names, row[1:]):
            cell = cell.strip()
            try:
                parsed.append(float(cell) if cell else math.nan)
            except ValueError:
                raise InputFileError(path, number, f"column {name!r}: not a number: {cell[:40]!r}") from None
        times.append(row[0].strip())
        values.append(parsed)
    if not values:
        raise InputFileError(path, None, "no data rows")
    matrix = np.asarray(values, dtype=float)
    return MetricTable(times=tuple(times), columns={name: matrix[:, i] for i, name in enumerate(names)})
