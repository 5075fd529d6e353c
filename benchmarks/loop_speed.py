"""Benchmark: one live loop step (monitor / tick / actuate / save, p50 / p95) over a real Prometheus, 4 and 100 executors.

Each size gets its own Prometheus scraping a synthetic job every second. Once a minute of samples exists, a Loop of
PrometheusMonitor + DryRunActuator + SqliteKnowledgeStore steps repeatedly, each step observing the full 60-s window
before now at 1-s steps, as the sidecar does once a minute. The controller is warmed with 30 synthetic minutes first
so the forecaster runs auto-ARIMA; refits run on a background thread and are waited out before each step (the goal
excludes them). Needs the `prometheus` binary (Debian package `prometheus`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from daedalus_spark.clock import SystemClock
from daedalus_spark.config import Config, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.demo.prometheus_server import BINARY, PrometheusServer
from daedalus_spark.domain import Observation, WorkerSeries
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.loop import Loop
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.synthetic import Exporter, SyntheticJob

SIZES = (4, 100)
WINDOW_S = 60.0
STEPS = 20
PARTS = ("monitor", "tick", "actuate", "save")


def job_of(n: int) -> SyntheticJob:
    rng = np.random.default_rng(n)
    share = rng.uniform(0.8, 1.2, n)
    throughput = tuple(float(x) for x in 1000.0 * n * share / share.sum())
    return SyntheticJob(throughput=throughput, cpu=tuple(float(x) for x in 0.3 + 0.4 * share / share.max()),
                        busy=tuple(0.5 for _ in range(n)), workload_per_s=1000.0 * n, started_s=time.time() - 1e4)


def warm(controller: Controller, job: SyntheticJob, end_s: float) -> None:
    """30 synthetic minutes before the measured steps: capacities learned, auto-ARIMA fitted."""
    rng = np.random.default_rng(0)
    n = len(job.throughput)
    for k in range(30):
        t = end_s - (30 - k) * WINDOW_S
        scale = 1 + 0.2 * np.sin((np.arange(60) + 60 * k) / 600.0)
        workers = tuple(WorkerSeries(str(i), tuple((job.throughput[i] * scale).tolist()),
                                     tuple(np.clip(job.cpu[i] * scale * rng.uniform(0.97, 1.03, 60), 0, 1).tolist()))
                        for i in range(n))
        controller.tick(Observation(t, 1.0, tuple((job.workload_per_s * scale).tolist()), workers, 0.0, n, 1e9), t)


def measure(n: int, job: SyntheticJob, prometheus: PrometheusServer, workdir: Path) -> dict[str, list[float]]:
    config: Config = parse_config({
        "controller": {"max_scaleout": max(12, n)},
        "monitor": {"prometheus_url": prometheus.url, "step_s": 1, "rate_window_s": 5, "timeout_s": 10},
    })
    refits = ThreadPoolExecutor(1, thread_name_prefix="refit")
    try:
        controller = Controller(config, refit_executor=refits)
        warm(controller, job, time.time() - WINDOW_S)
        monitor = PrometheusMonitor(config.monitor, config.controller.utilization_signal)
        loop = Loop(controller, monitor, DryRunActuator(live=n), SqliteKnowledgeStore(workdir / f"k-{n}.sqlite"),
                    SystemClock())
        times: dict[str, list[float]] = {p: [] for p in (*PARTS, "loop")}
        for _ in range(STEPS):
            refits.submit(lambda: None).result()  # no refit in flight: refits are excluded from the goal
            loop._window_end_s = None  # every step observes one full interval, as at steady state
            started = time.perf_counter()
            result = loop.step()
            times["loop"].append(time.perf_counter() - started)
            if result.monitor_error is not None:
                print(f"  warning: step could not observe: {result.monitor_error}")
            for part in PARTS:
                times[part].append(result.timings_s.get(part, 0.0))
        monitor.close()
        return times
    finally:
        refits.shutdown(wait=True)


def main() -> int:
    if not os.access(BINARY, os.X_OK):
        print(f"loop_speed: no Prometheus at {BINARY} (Debian package `prometheus`); skipped")
        return 0
    exporters, servers = [], []
    with tempfile.TemporaryDirectory(prefix="loop-speed-") as tmp:
        try:
            jobs = {n: job_of(n) for n in SIZES}
            for n in SIZES:
                exporters.append(Exporter(lambda job=jobs[n]: job.page(time.time())).start())
                target = exporters[-1].url.removeprefix("http://").removesuffix("/metrics")
                servers.append(PrometheusServer([target]).start())
            print(f"collecting {WINDOW_S + 10:.0f} s of 1-s scrapes ...", flush=True)
            time.sleep(WINDOW_S + 10)  # the window is filled by real scrapes, not simulated
            print(f"loop step, {STEPS} steps, {WINDOW_S:.0f}-s window at 1-s steps (ms, p50 / p95; refits excluded)")
            for n, server in zip(SIZES, servers, strict=True):
                times = measure(n, jobs[n], server, Path(tmp))
                cells = "   ".join(f"{p} {np.percentile(v, 50) * 1e3:6.1f} / {np.percentile(v, 95) * 1e3:6.1f}"
                                   for p, v in times.items())
                print(f"{n:>4} executors: {cells}", flush=True)
        finally:
            for server in servers:
                server.stop()
            for exporter in exporters:
                exporter.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
