"""Report: capacity of a job from exported per-worker utilization and throughput CSVs, for people and for JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.config import CapacityConfig
from daedalus_spark.domain import CapacityTable, Observation, WorkerSeries
from daedalus_spark.monitor.files import InputFileError, read_metric_csv


@dataclass(frozen=True)
class CapacityReport:
    table: CapacityTable
    samples: int


def capacity_from_csv(
    utilization_path: str | Path,
    throughput_path: str | Path,
    config: CapacityConfig,
    *,
    max_scaleout: int | None = None,
    smooth_samples: int = 1,
) -> CapacityReport:
    """Learn every worker's regression from the whole files; load shares come from the last 4 samples.

    `smooth_samples` > 1 averages throughput over that many trailing samples, to match a utilization that was
    exported as a moving average (CPU is usually a 1-minute rate): unaligned windows bias the slope.
    """
    util = read_metric_csv(utilization_path)
    thr = read_metric_csv(throughput_path)
    if util.times != thr.times:
        raise InputFileError(throughput_path, None, f"time column differs from {utilization_path}")
    missing = sorted(set(util.columns) ^ set(thr.columns))
    if missing:
        raise InputFileError(throughput_path, 1, f"worker columns not in both files: {', '.join(missing)}")
    workers = tuple(
        WorkerSeries(w, _trailing_mean(thr.columns[w], smooth_samples), tuple(util.columns[w].tolist()))
        for w in sorted(util.columns)
    )
    model = CapacityModel(config)
    learned = model.learn(_observation(workers, len(util.times)))
    recent = tuple(WorkerSeries(w.worker_id, w.throughput_per_s[-4:], w.utilization_ratio[-4:]) for w in workers)
    table = model.table(_observation(recent, 4), max_scaleout or len(workers))
    if table is None:
        raise InputFileError(utilization_path, None, "no usable (finite, non-negative) samples")
    return CapacityReport(table=table, samples=learned)


def _trailing_mean(values: np.ndarray, window: int) -> tuple[float, ...]:
    return tuple(pd.Series(values).rolling(max(1, window), min_periods=1).mean().tolist())


def _observation(workers: tuple[WorkerSeries, ...], n: int) -> Observation:
    return Observation(
        time_s=float(n), step_s=1.0, workload_per_s=(0.0,) * n, workers=workers,
        consumer_lag_records=0.0, scaleout=len(workers), uptime_s=math.inf,
    )


def to_json(report: CapacityReport) -> dict[str, Any]:
    t = report.table
    return {
        "total_capacity": t.current_per_s,
        "current_scaleout": t.current_scaleout,
        "per_scaleout": {str(n): c for n, c in enumerate(t.per_scaleout_per_s, start=1)},
        "workers": {
            w.worker_id: {
                "capacity": w.capacity_per_s,
                "own_capacity": w.own_capacity_per_s,
                "skew_factor": w.skew_factor_ratio,
                "load_share": w.load_share_ratio,
                "intercept": w.intercept_per_s,
                "slope": w.slope_per_s,
                "samples": w.samples,
                "method": w.method,
            }
            for w in t.workers
        },
    }


def format_text(report: CapacityReport) -> str:
    t = report.table
    lines = [f"{'worker':<40} {'samples':>7} {'a (rec/s)':>11} {'b (rec/s)':>11} "
             f"{'own cap':>10} {'share':>6} {'skew':>5} {'capacity':>10}  method"]
    for w in t.workers:
        lines.append(
            f"{w.worker_id[-40:]:<40} {w.samples:>7} {w.intercept_per_s:>11.0f} {w.slope_per_s:>11.0f} "
            f"{w.own_capacity_per_s:>10.0f} {w.load_share_ratio:>6.3f} {w.skew_factor_ratio:>5.2f} "
            f"{w.capacity_per_s:>10.0f}  {w.method}"
        )
    lines.append(f"current capacity at scale-out {t.current_scaleout}: {t.current_per_s:,.0f} records/s")
    lines.append("capacity per scale-out (records/s): " + ", ".join(
        f"{n}: {c:,.0f}" for n, c in enumerate(t.per_scaleout_per_s, start=1)))
    return "\n".join(lines)

