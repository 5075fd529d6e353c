"""Benchmark: controller tick time at 12, 48, 100 and 200 executors (two skewed source partitions each, Spark's
Kafka placement) with the forecaster warm (p50/p95 of wall time and of the tick's own CPU time), for each planner.

  python benchmarks/tick_speed.py                                # the default planner
  python benchmarks/tick_speed.py --planner horizon --pool process --executors 100
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

from daedalus_spark.config import parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation
from daedalus_spark.runtime.refit_scheduler import PoolRefits

WARM_TICKS = 30  # 30 minutes of history: ARIMA is fitted and being updated
MEASURED_TICKS = 40


def window(t_end: float, scaleout: int, rng: np.random.Generator, load: np.ndarray) -> Observation:
    per_executor = load / scaleout
    executors = {}
    for i in range(scaleout):
        thr = per_executor * rng.uniform(0.95, 1.05, load.size)
        executors[f"exec-{i}"] = (thr, np.clip(0.1 + 0.9 * thr / 1000.0, 0, 1))
    # Two source partitions per executor, skewed (Zipf-like shares), as the monitor's per-partition query reports.
    shares = 1.0 / np.sqrt(np.arange(1, 2 * scaleout + 1))
    rates = float(load.mean()) * shares / shares.sum()
    partitions = {("events", p): float(r) for p, r in enumerate(rates)}
    return Observation.of(time_s=t_end, workload_per_s=load, executors=executors, partitions=partitions)


def measure(scaleout: int, pool: Executor, planner: str) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Tick times (s) split by whether a background refit was running; ticks here run back to back, so far more of
    them overlap a refit than at one tick a minute."""
    config = parse_config(
        {
            "controller": {
                "max_scaleout": max(scaleout, 12),
                "cooldown_s": 0,
                "recent_rescale_window_s": 0,
                "planner": planner,
            },
            "agent": {"max_executors": max(scaleout, 12)},
        }
    )
    refits = PoolRefits(pool)
    controller = Controller(config, refits=refits)
    rng = np.random.default_rng(0)
    seconds = np.arange(60 * (WARM_TICKS + MEASURED_TICKS))
    workload = scaleout * 600 * (1 + 0.3 * np.sin(seconds / 900.0)) * rng.uniform(0.97, 1.03, seconds.size)
    quiet: list[tuple[float, float]] = []  # (wall, CPU time of the tick's thread) per tick
    during_refit: list[tuple[float, float]] = []
    forecaster = controller.knowledge.forecaster
    for k in range(WARM_TICKS + MEASURED_TICKS):
        t = 60.0 * (k + 1)
        obs = window(t, scaleout, rng, workload[60 * k : 60 * (k + 1)])
        refitting = forecaster.refit_pending
        start, cpu_start = time.perf_counter(), time.thread_time()
        controller.tick(obs, t)
        elapsed = (time.perf_counter() - start, time.thread_time() - cpu_start)
        if k >= WARM_TICKS:
            (during_refit if refitting or forecaster.refit_pending else quiet).append(elapsed)
        elif k == WARM_TICKS - 1:
            # Ticks here come back to back, not a minute apart: let the first fit finish (a spawned process takes
            # seconds to start) so the measured ticks update and predict an ARIMA, as in the sidecar.
            refits.wait()
    return quiet, during_refit


def percentiles(times: list[tuple[float, float]]) -> str:
    """Wall time, then the CPU time of the tick's own thread: what the tick costs whatever else shares the cores."""
    if not times:
        return "      (none)"
    wall, cpu = (np.asarray(column) * 1000 for column in zip(*times, strict=True))
    p50, p95, c50, c95 = (float(np.percentile(x, q)) for x in (wall, cpu) for q in (50, 95))
    return f"p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  (CPU p50 {c50:6.1f}  p95 {c95:6.1f}; {len(times)} ticks)"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--planner", action="append", choices=("paper", "cost_aware", "horizon", "batch_ratio"))
    parser.add_argument("--pool", action="append", choices=("process", "thread"))
    parser.add_argument("--executors", action="append", type=int)
    args = parser.parse_args()
    print(
        f"tick time over {MEASURED_TICKS} ticks after {WARM_TICKS} warm-up ticks (60 one-second samples per executor)"
    )
    # Refits in a spawned process, as the sidecar runs them, and in a thread (how they ran before, for comparison:
    # a thread holds the GIL against the tick).
    pools: dict[str, Callable[[], Executor]] = {
        "process": lambda: ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")),
        "thread": lambda: ThreadPoolExecutor(1, thread_name_prefix="refit"),
    }
    for planner in args.planner or ["horizon"]:
        for kind in args.pool or list(pools):
            for n in args.executors or [12, 48, 100, 200]:
                with pools[kind]() as pool:
                    quiet, during_refit = measure(n, pool, planner)
                print(
                    f"{planner:>10} {kind:>7} {n:>4} executors: no refit running {percentiles(quiet)}; "
                    f"refit running {percentiles(during_refit)}"
                )
