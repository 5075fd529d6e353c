"""Report: capacity of a job from exported per-executor utilization and throughput CSVs, for people and for JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.config import CapacityConfig
from daedalus_spark.domain import CapacityTable, ExecutorSeries, Observation
from daedalus_spark.monitor.files import InputFileError, read_metric_csv, time_step_s


@dataclass(frozen=True)
class CapacityReport:
    table: CapacityTable
    samples: int
    # The throughput window used (s; 0 = none) and where it came from: "option", "file" (the utilization file's
    # `# window:` line) or "assumed" (neither said: the columns are taken as aligned, row for row).
    window_s: float = 0.0
    window_from: str = "assumed"

    def assumption(self) -> str | None:
        """One line saying what was assumed, when the input did not say it."""
        if self.window_from != "assumed":
            return None
        return (
            "capacity: assumed the utilization and throughput rows are aligned (each row's own second, no averaging): "
            "neither --utilization-window nor a '# window: 60s' line above the utilization header says over which "
            "window the utilization was measured"
        )


def capacity_from_csv(
    utilization_path: str | Path,
    throughput_path: str | Path,
    config: CapacityConfig,
    *,
    max_scaleout: int | None = None,
    smooth_samples: int | None = None,
    utilization_window_s: float | None = None,
) -> CapacityReport:
    """Learn every executor's regression from the whole files; load shares come from the last 4 samples.

    Throughput is averaged over the trailing window the utilization was measured over (in rows, from the time
    column's step), so that both cover the same time, as the live monitor's shared rate window does (unaligned
    windows bias the slope). The window is `utilization_window_s`, else the utilization file's `# window:` line,
    else none (rows taken as aligned; `CapacityReport.assumption()` says so). `smooth_samples` gives the rows
    directly; 1 = no alignment.
    """
    util = read_metric_csv(utilization_path)
    thr = read_metric_csv(throughput_path)
    if utilization_window_s is not None:
        window_s, window_from = utilization_window_s, "option"
    elif util.window_s is not None:
        window_s, window_from = util.window_s, "file"
    else:
        window_s, window_from = 0.0, "assumed"
    if smooth_samples is not None:
        window_from = "option"
    if util.times != thr.times:
        raise InputFileError(throughput_path, None, _time_mismatch(util.times, thr.times, utilization_path))
    missing = sorted(set(util.columns) ^ set(thr.columns))
    if missing:
        raise InputFileError(throughput_path, 1, f"executor columns not in both files: {', '.join(missing)}")
    if smooth_samples is None:  # a derived window never exceeds the file (a short export is averaged whole)
        smooth_samples = min(_rows_in(window_s, time_step_s(util.times)), len(util.times))
    if smooth_samples > len(util.times):
        raise InputFileError(
            throughput_path,
            None,
            f"--smooth-throughput {smooth_samples} is more than its {len(util.times)} rows (it would average them all)",
        )
    _check_usable(utilization_path, util.columns, throughput_path, thr.columns)
    _check_not_counters(utilization_path, util.columns, "utilization")
    _check_not_counters(throughput_path, thr.columns, "throughput")
    executors = tuple(
        ExecutorSeries(w, _trailing_mean(thr.columns[w], smooth_samples), tuple(util.columns[w].tolist()))
        for w in sorted(util.columns)
    )
    model = CapacityModel(config)
    learned = model.learn(_observation(executors, len(util.times)))
    recent = tuple(ExecutorSeries(w.executor_id, w.throughput_per_s[-4:], w.utilization_ratio[-4:]) for w in executors)
    table = model.table(_observation(recent, 4), max_scaleout or len(executors))
    if table is None:
        raise InputFileError(utilization_path, None, "no usable (finite, non-negative) samples")
    return CapacityReport(table=table, samples=learned, window_s=window_s, window_from=window_from)


def _time_mismatch(util: tuple[str, ...], thr: tuple[str, ...], utilization_path: str | Path) -> str:
    if len(util) != len(thr):
        return f"time column differs from {utilization_path} ({len(thr)} rows there {len(util)})"
    i = next(i for i, (a, b) in enumerate(zip(util, thr, strict=False)) if a != b)
    return f"time column differs from {utilization_path} (row {i + 1}: {thr[i][:30]!r} there {util[i][:30]!r})"


def _check_usable(
    utilization_path: str | Path, util: dict[str, np.ndarray], throughput_path: str | Path, thr: dict[str, np.ndarray]
) -> None:
    """Name the file that makes the samples unusable, and say why when the reason is recognisable."""
    u = np.concatenate(list(util.values()))
    t = np.concatenate(list(thr.values()))
    u_ok, t_ok = np.isfinite(u) & (u >= 0), np.isfinite(t) & (t >= 0)
    if not t_ok.any():
        raise InputFileError(throughput_path, None, "no usable samples: every throughput is empty, NaN or negative")
    if not u_ok.any():
        raise InputFileError(utilization_path, None, "no usable samples: every utilization is empty, NaN or negative")
    if not (t[t_ok] > 0).any():
        raise InputFileError(throughput_path, None, "no usable samples: every throughput is 0 (nothing processed)")
    if not (u[u_ok] > 0).any():
        raise InputFileError(utilization_path, None, "no usable samples: every utilization is 0")
    # Samples above 1.2 are dropped as implausible; if most are, the export is in percent, not a ratio.
    if np.median(u[u_ok]) > 1.2 and np.nanmax(u[u_ok]) <= 100:
        raise InputFileError(
            utilization_path,
            None,
            f"utilization looks like percent (median {np.median(u[u_ok]):.1f}, max {np.nanmax(u[u_ok]):.1f}): "
            "export it as a ratio 0..1 (divide by 100)",
        )
    if not (u_ok & t_ok & (u <= 1.2)).any():
        raise InputFileError(
            utilization_path,
            None,
            f"no usable samples: no row has a utilization in 0..1.2 together with a throughput in {throughput_path}",
        )


def _check_not_counters(path: str | Path, columns: dict[str, np.ndarray], what: str) -> None:
    """A column that rises at (nearly) every row, in every column, is a counter (records or CPU seconds so far),
    not a rate: refused, naming the file, rather than read as a throughput or utilization."""
    rising = []
    for values in columns.values():
        finite = values[np.isfinite(values)]
        steps = np.diff(finite)
        rising.append(len(steps) >= 10 and float(np.mean(steps > 0)) >= 0.95)
    if all(rising):
        raise InputFileError(
            path,
            None,
            f"every {what} column rises at nearly every row, like a counter (a total so far): export its "
            "rate per second, e.g. rate(...[1m]) in Prometheus",
        )


def _rows_in(window_s: float, step_s: float | None) -> int:
    """Rows of a table with this time step that cover `window_s` (1 when either is unknown or zero)."""
    if step_s is None or step_s <= 0 or window_s <= 0:
        return 1
    return max(1, round(window_s / step_s))


def _trailing_mean(values: np.ndarray, window: int) -> tuple[float, ...]:
    return tuple(pd.Series(values).rolling(max(1, window), min_periods=1).mean().tolist())


def _observation(executors: tuple[ExecutorSeries, ...], n: int) -> Observation:
    return Observation(
        time_s=float(n),
        step_s=1.0,
        workload_per_s=(0.0,) * n,
        executors=executors,
        consumer_lag_records=0.0,
        scaleout=len(executors),
        uptime_s=math.inf,
    )


def to_json(report: CapacityReport) -> dict[str, Any]:
    t = report.table
    return {
        "utilization_window_s": report.window_s,
        "utilization_window_from": report.window_from,
        "total_capacity": t.current_per_s,
        "current_scaleout": t.current_scaleout,
        "per_scaleout": {str(n): c for n, c in enumerate(t.per_scaleout_per_s, start=1)},
        "executors": {
            w.executor_id: {
                "capacity": w.capacity_per_s,
                "own_capacity": w.own_capacity_per_s,
                "skew_factor": w.skew_factor_ratio,
                "load_share": w.load_share_ratio,
                "intercept": w.intercept_per_s,
                "slope": w.slope_per_s,
                "samples": w.samples,
                "method": w.method,
            }
            for w in t.executors
        },
    }


def format_text(report: CapacityReport) -> str:
    t = report.table
    lines = [
        f"{'executor':<40} {'samples':>7} {'a (rec/s)':>11} {'b (rec/s)':>11} "
        f"{'own cap':>10} {'share':>6} {'skew':>5} {'capacity':>10}  method"
    ]
    for w in t.executors:
        lines.append(
            f"{w.executor_id[-40:]:<40} {w.samples:>7} {w.intercept_per_s:>11.0f} {w.slope_per_s:>11.0f} "
            f"{w.own_capacity_per_s:>10.0f} {w.load_share_ratio:>6.3f} {w.skew_factor_ratio:>5.2f} "
            f"{w.capacity_per_s:>10.0f}  {w.method}"
        )
    lines.append(f"current capacity at scale-out {t.current_scaleout}: {t.current_per_s:,.0f} records/s")
    lines.append(
        "capacity per scale-out (records/s): "
        + ", ".join(f"{n}: {c:,.0f}" for n, c in enumerate(t.per_scaleout_per_s, start=1))
    )
    return "\n".join(lines)
