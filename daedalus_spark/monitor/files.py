"""Monitor (offline): read workload traces and per-executor metric CSVs exported from Grafana or Prometheus."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads with the first file read: the command line lists the bundled traces without it
    import numpy as np

# The workload traces of the paper's evaluation, shipped in the repository (workloads/traces, with their README).
BUNDLED_TRACES_DIR = Path(__file__).resolve().parents[2] / "workloads" / "traces"
BUNDLED_TRACES = {
    "wordcount": BUNDLED_TRACES_DIR / "wordcount_sine_40000_6h.csv",
    "ysb": BUNDLED_TRACES_DIR / "ysb_advertising_6h_400K_max.csv",
    "traffic": BUNDLED_TRACES_DIR / "traffic_tm_6h_100K_max.csv",
}

# Largest magnitude of a metric value: beyond it sums of shares overflow (1e308 -> inf); no job reaches 1e15/s.
MAX_METRIC_VALUE = 1e15


class InputFileError(ValueError):
    """A malformed input file; the message names the file and the line."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


# Largest input file read (a 6-hour trace is 300 kB, a day of 1-s metrics for 100 executors ~100 MB); bounds memory
# and ends reads of endless devices (/dev/zero) or pipes.
MAX_INPUT_BYTES = 256 * 1024 * 1024


def _read_lines(path: str | Path) -> list[str]:
    try:
        with Path(path).open("rb") as f:
            raw = f.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read ({exc.strerror})") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise InputFileError(path, None, f"larger than {MAX_INPUT_BYTES // 2**20} MiB; split or downsample it")
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
    import numpy as np

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
        if not 0 <= count <= MAX_METRIC_VALUE:
            raise InputFileError(
                path,
                number,
                f"count must be a finite number >= 0 and <= {MAX_METRIC_VALUE:g}, got {fields[1].strip()[:40]!r}",
            )
        if expected_second not in (None, -1) and second != expected_second:
            raise InputFileError(path, number, f"second {second} out of order (expected {expected_second})")
        expected_second = second + 1
        counts.append(count)
    if not counts:
        raise InputFileError(path, None, "no data rows")
    return np.asarray(counts, dtype=float)


@dataclass(frozen=True)
class MetricTable:
    """A wide metrics CSV: a time column and one column per series (e.g. per executor); `window_s`: the window its
    values are rates or averages over, when a `# window: 60s` line above the header says so."""

    times: tuple[str, ...]
    columns: dict[str, np.ndarray]
    window_s: float | None = None


_WINDOW_LINE = re.compile(r"#\s*window(?:_s)?\s*[:=]\s*(.+?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
_DURATION_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def _comment_window(path: str | Path, rows: list[tuple[int, list[str]]]) -> tuple[float | None, int]:
    """The window a `# window: 60s` (or `# window_s: 60`) line above the header gives, and how many comment rows
    lead the file (other `#` lines are notes, skipped)."""
    window_s, skipped = None, 0
    for number, row in rows:
        line = ",".join(row).strip()
        if not line.startswith("#"):
            break
        skipped += 1
        if m := _WINDOW_LINE.fullmatch(line):
            d = _DURATION.fullmatch(m.group(1).lower())
            if d is None or not 0 <= float(d.group(1)) * _DURATION_S[d.group(2)] <= 86_400:
                raise InputFileError(path, number, f"window {m.group(1)[:20]!r}: expected a duration like 60s or 1m")
            window_s = float(d.group(1)) * _DURATION_S[d.group(2)]
    return window_s, skipped


def read_metric_csv(path: str | Path) -> MetricTable:
    """A CSV with a time column first and one numeric column per series; empty cells become NaN.

    Rows must be in increasing time order (numbers or ISO timestamps); unsorted or repeated times are refused,
    naming the line, because the analysis reads the rows as a time series.
    """
    rows = _csv_rows(path)
    window_s, comments = _comment_window(path, rows)
    rows = rows[comments:]
    if not rows or len(rows[0][1]) < 2:
        raise InputFileError(path, 1, "expected a header with a time column and at least one series column")
    header = [h.strip() for h in rows[0][1]]
    names = header[1:]
    if "" in names:
        # An executor named "" cannot be told apart in any report, nor matched between the two files.
        raise InputFileError(path, 1, f"column {names.index('') + 2} of the header has no name (each series needs one)")
    if len(set(names)) != len(names):
        raise InputFileError(path, 1, "duplicate column names in the header")
    times: list[str] = []
    lines: list[int] = []
    values: list[list[float]] = []
    for number, row in rows[1:]:
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputFileError(path, number, f"expected {len(header)} fields, got {len(row)}")
        parsed = []
        for name, cell in zip(names, row[1:], strict=False):
            cell = cell.strip()
            parsed.append(_cell(path, number, name, cell))
        times.append(row[0].strip())
        lines.append(number)
        values.append(parsed)
    if not values:
        raise InputFileError(path, None, "no data rows")
    _check_time_order(path, times, lines)
    import numpy as np

    matrix = np.asarray(values, dtype=float)
    return MetricTable(
        times=tuple(times), columns={name: matrix[:, i] for i, name in enumerate(names)}, window_s=window_s
    )


def _csv_rows(path: str | Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every row; a csv error (a stray quote, a cell over the field limit) names its line."""
    reader = csv.reader(io.StringIO("\n".join(_read_lines(path))), strict=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise InputFileError(path, reader.line_num, f"not a valid CSV row ({exc})") from None
    return rows


def _cell(path: str | Path, line: int, column: str, cell: str) -> float:
    if not cell:
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        raise InputFileError(path, line, f"column {column!r}: not a number: {cell[:40]!r}") from None
    if math.isnan(value):
        return value  # an explicit NaN is a missing sample, like an empty cell
    if not abs(value) <= MAX_METRIC_VALUE:
        raise InputFileError(path, line, f"column {column!r}: {cell[:40]} is beyond {MAX_METRIC_VALUE:g}")
    return value


def time_step_s(times: tuple[str, ...] | list[str]) -> float | None:
    """The median step of a time column in seconds; None when its times are neither numbers nor ISO timestamps."""
    keys = _time_keys(list(times))
    if keys is None or len(keys) < 2:
        return None
    import numpy as np

    return float(np.median(np.diff(keys)))


def _time_keys(times: list[str]) -> list[float] | None:
    """Times as seconds, if every one is a number or every one an ISO timestamp; None otherwise."""
    try:
        return [float(t) for t in times]
    except ValueError:
        pass
    try:
        from datetime import UTC, datetime

        # A timestamp without a zone is UTC, whatever this machine's zone (a local zone's DST change would repeat an
        # hour, or skip one, in the steps).
        stamps = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times]
        return [(d if d.tzinfo else d.replace(tzinfo=UTC)).timestamp() for d in stamps]
    except (ValueError, TypeError, OverflowError):
        return None


def _check_time_order(path: str | Path, times: list[str], lines: list[int]) -> None:
    keys = _time_keys(times)
    if keys is None:
        return  # free-form labels: nothing to order by; both files must still share them (checked by the caller)
    for i in range(1, len(keys)):
        if not keys[i] > keys[i - 1]:
            what = "repeats" if keys[i] == keys[i - 1] else "goes back from"
            raise InputFileError(
                path,
                lines[i],
                f"time {times[i][:30]!r} {what} {times[i - 1][:30]!r} at line {lines[i - 1]}: "
                "rows must be in increasing time order (sort the export)",
            )
