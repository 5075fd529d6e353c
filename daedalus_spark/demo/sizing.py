"""Demo: whether the demo's load needs autoscaling — its trough and peak (lines/s) against the capacity at the
latency objective calibrated at 1..max executors (deploy/demo.yaml `demo:`), and when in the run they come."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from daedalus_spark.monitor.files import read_trace

TROUGH_SHARE_MAX = 0.5  # the trough needs one executor: load <= 0.5 x capacity at 1
PEAK_SHARE_MIN = 0.75  # the peak needs the maximum: load >= 0.75 x capacity at max, and > capacity at max - 1


@dataclass(frozen=True)
class LoadExtremes:
    trough_per_s: float  # lines/s produced at the trough (trace count x scale x compression)
    peak_per_s: float
    trough_at_s: float  # seconds into the load cycle
    peak_at_s: float


def load_extremes(trace: Path, *, start_s: int, seconds: int, scale: float, compression: float) -> LoadExtremes:
    """The played part of the trace's lowest and highest second, as lines/s and as seconds into the demo."""
    counts = read_trace(trace)[start_s : start_s + seconds]
    if counts.size == 0:
        raise ValueError(f"{trace}: no trace seconds in {start_s}..{start_s + seconds}")
    low, high = int(counts.argmin()), int(counts.argmax())
    rate = scale * compression
    return LoadExtremes(float(counts[low]) * rate, float(counts[high]) * rate, low / compression, high / compression)


def sizing_problems(load: LoadExtremes, capacity_per_s: list[float], max_scaleout: int) -> list[str]:
    """Why this load does not need 1 executor at its trough and `max_scaleout` at its peak, one line each ([]: it
    does). `capacity_per_s[n - 1]` is the capacity at the latency objective at n executors."""
    if len(capacity_per_s) != max_scaleout:
        return [f"{len(capacity_per_s)} capacities calibrated, expected one per 1..{max_scaleout}"]
    top, below = capacity_per_s[-1], capacity_per_s[-2] if max_scaleout > 1 else 0.0
    problems = []
    if load.trough_per_s > TROUGH_SHARE_MAX * capacity_per_s[0]:
        problems.append(
            f"trough {load.trough_per_s:,.0f} lines/s above {TROUGH_SHARE_MAX:g} x {capacity_per_s[0]:,.0f} "
            "(capacity at 1 executor)"
        )
    if load.peak_per_s < PEAK_SHARE_MIN * top:
        problems.append(
            f"peak {load.peak_per_s:,.0f} lines/s below {PEAK_SHARE_MIN:g} x {top:,.0f} (capacity at {max_scaleout})"
        )
    if load.peak_per_s <= below:
        problems.append(
            f"peak {load.peak_per_s:,.0f} lines/s not above {below:,.0f} (capacity at {max_scaleout - 1}): "
            f"{max_scaleout - 1} executors carry it"
        )
    return problems
