"""Analyze: the capacity model's arithmetic on one window — plausible samples, load shares, the job's saturation
point and one row per executor (pure functions; the model's memory stays in capacity.py)."""

from __future__ import annotations

import math

from daedalus_spark.analyze.stats import OnlineRegression
from daedalus_spark.domain import ExecutorCapacity, ExecutorSeries, Observation

# Utilization slightly above 1 happens (sampling jitter, cgroup accounting); beyond this it is garbage.
MAX_PLAUSIBLE_UTILIZATION = 1.2
# Own capacities that rest on a fitted slope; only these may set the job's saturation when any exists.
FITTED_METHODS = frozenset({"regression", "pooled"})


def saturation_point_per_s(owns: dict[str, tuple[float, str]], shares: dict[str, float]) -> float | None:
    """The job's throughput when its most constrained executor saturates (each executor's own capacity over its
    share). An executor whose own capacity rests on no fitted slope cannot be that executor alone: when the lowest
    estimate is such a one, the second lowest sets it (one executor fed by stalls set a whole job's capacity 10x
    too low in a live run; two that agree are evidence)."""
    each = sorted(
        (c / shares[w], m in FITTED_METHODS) for w, (c, m) in owns.items() if math.isfinite(c) and c > 0 < shares[w]
    )
    if not each:
        return None
    lowest, fitted = each[0]
    return lowest if fitted or len(each) == 1 else each[1][0]


def executor_rows(
    samples: dict[str, list[float]],
    owns: dict[str, tuple[float, str]],
    shares: dict[str, float],
    saturation: float,
    measured: float,
    regressions: dict[str, OnlineRegression],
) -> tuple[ExecutorCapacity, ...]:
    """One row per executor; joining ones and ones without usable data carry their peers' mean."""
    known = [c for c, _ in owns.values() if math.isfinite(c) and c > 0]
    peer_mean = sum(known) / len(known) if known else math.nan
    joining = [w for w in samples if w not in owns]
    rows = []
    for w in samples:
        own, method = owns.get(w, (peer_mean, "joining"))
        if not (math.isfinite(own) and own > 0):
            own, method = peer_mean, "peer_mean"
        share = shares.get(w, 0.0)
        capacity = share * saturation if w in owns else (measured - saturation) / len(joining)
        if method not in FITTED_METHODS and own < capacity:
            own, method = capacity, "peers"  # its unfitted estimate was overruled by what its peers show
        reg = regressions.get(w, OnlineRegression())
        rows.append(ExecutorCapacity(w, reg.n, reg.intercept, reg.slope, own, share, capacity, method))
    return tuple(rows)


def running_max(values: list[float]) -> list[float]:
    out: list[float] = []
    for v in values:
        out.append(max(v, out[-1]) if out else v)
    return out


def sample_times(observation: Observation) -> list[float]:
    """The end time of each sample of the window, oldest first."""
    n = len(observation.workload_per_s)
    return [observation.time_s - (n - 1 - i) * observation.step_s for i in range(n)]


def job_throughput_per_s(executors: dict[str, list[float]]) -> float:
    """Mean records/s of the whole job over the window (executors' plausible samples)."""
    means = [sum(ys) / len(ys) for ys in executors.values() if ys]
    return sum(means)


def plausible_samples(executor: ExecutorSeries, times: list[float]) -> list[tuple[int, float, float, float]]:
    """(index, time, utilization, throughput) of every sample that could be real."""
    samples = zip(times, executor.utilization_ratio, executor.throughput_per_s, strict=False)
    # Finite and in range, in comparisons alone (a NaN fails every one): the samples of every executor each tick.
    return [
        (i, t, x, y)
        for i, (t, x, y) in enumerate(samples)
        if 0.0 <= x <= MAX_PLAUSIBLE_UTILIZATION and 0.0 <= y < math.inf
    ]


def load_shares(executors: dict[str, list[float]]) -> dict[str, float]:
    means = {w: (sum(ys) / len(ys) if ys else 0.0) for w, ys in executors.items()}
    total = sum(means.values())
    if total <= 0:
        return {w: 1.0 / len(executors) for w in executors}
    return {w: m / total for w, m in means.items()}
