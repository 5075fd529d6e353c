"""Benchmark: controller tick time at 12, 48, 100 and 200 executors with the forecaster warm (p50/p95)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from daedalus_spark.config import parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation

WARM_TICKS = 30  # 30 minutes of history: ARIMA is fitted and being updated
MEASURED_TICKS = 40


def window(t_end: float, scaleout: int, rng: np.random.Generator, load: np.ndarray) -> Observation:
    per_executor = load / scaleout
    executors = {}
    for i in range(scaleout):
        thr = per_executor * rng.uniform(0.95, 1.05, load.size)
        executors[f"exec-{i}"] = (thr, np.clip(0.1 + 0.9 * thr / 1000.0, 0, 1))
    return Observation.of(time_s=t_end, workload_per_s=load, executors=executors)


def measure(scaleout: int) -> tuple[float, float]:
    config = parse_config(
        {"controller": {"max_scaleout": max(scaleout, 12), "cooldown_s": 0, "recent_rescale_window_s": 0}}
    )
    # Refits run on a background thread as in the runtime (the forecaster searches afresh every
    # forecast.refit_interval_s); the goal is the tick without them.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refit")
    controller = Controller(config, refit_pool=pool)
    rng = np.random.default_rng(0)
    seconds = np.arange(60 * (WARM_TICKS + MEASURED_TICKS))
    workload = scaleout * 600 * (1 + 0.3 * np.sin(seconds / 900.0)) * rng.uniform(0.97, 1.03, seconds.size)
    times = []
    for k in range(WARM_TICKS + MEASURED_TICKS):
        t = 60.0 * (k + 1)
        obs = window(t, scaleout, rng, workload[60 * k : 60 * (k + 1)])
        start = time.perf_counter()
        controller.tick(obs, t)
        if k >= WARM_TICKS:
            times.append(time.perf_counter() - start)
    pool.shutdown(wait=True)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


if __name__ == "__main__":
    print(
        f"tick time over {MEASURED_TICKS} ticks after {WARM_TICKS} warm-up ticks (60 one-second samples per executor)"
    )
    for n in (12, 48, 100, 200):
        p50, p95 = measure(n)
        print(f"{n:>4} executors: p50 {p50 * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms")
