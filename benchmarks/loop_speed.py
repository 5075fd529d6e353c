"""Benchmark: one live loop step (monitor / tick / actuate / save, p50/p95) over a real Prometheus, 4 and 100 executors.

Each size gets its own Prometheus scraping a synthetic job every second; once 65 s of samples exist, a Loop of
PrometheusMonitor + DryRunActuator + SqliteKnowledgeStore steps repeatedly, every step observing the full 60-s window
before now at 1-s steps, as the sidecar does once a minute. The controller is warmed first with 30 synthetic
minutes so the forecaster runs auto-ARIMA; refits go to a background thread pool and are waited out before
measuring (the goal excludes them). Needs /usr/bin/prometheus (Debian package `prometheus`).
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from daedalus_spark.clock import SystemClock
from daedalus_spark.config import Config, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.loop import Loop
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus
from daedalus_spark.monitor.synthetic import Exporter, SyntheticJob, serve
from daedalus_spark.runtime.refit_scheduler import PoolRefits

SIZES = (4, 100)
WINDOW_S = 60.0
WARM_TICKS = 30
MEASURED_STEPS = 30
PARTS = ("monitor", "tick", "actuate", "save")


def config_for(executors: int, url: str) -> Config:
    return parse_config(
        {
            "controller": {"max_scaleout": max(12, executors), "loop_interval_s": WINDOW_S},
            "monitor": {
                "prometheus_url": url,
                "step_s": 1,
                "rate_window_s": 5,
                "scrape_interval_s": 1,
                "timeout_s": 10,
            },
            "forecast": {"background_refit": True},
        }
    )


def warm(controller: Controller, job: SyntheticJob, end_s: float) -> None:
    """30 synthetic minutes ending before the measured steps: the forecaster fits, capacities are learned."""
    rng = np.random.default_rng(0)
    n = job.executors
    for k in range(WARM_TICKS):
        t = end_s - (WARM_TICKS - k) * WINDOW_S
        scale = 1 + 0.2 * np.sin((np.arange(60) + 60 * k) / 600.0)
        executors = {
            str(i): (
                job.throughput_per_s(i) * scale,
                np.clip(job.utilization_ratio(i) * scale * rng.uniform(0.97, 1.03, 60), 0, 1),
            )
            for i in range(1, n + 1)
        }
        workload = job.workload_per_s() * scale
        controller.tick(Observation.of(time_s=t, workload_per_s=workload, executors=executors), t)


def measure(executors: int, prometheus: PrometheusServer, job: SyntheticJob, workdir: Path) -> dict[str, list[float]]:
    config = config_for(executors, prometheus.url)
    refits = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refit")
    try:
        controller = Controller(config, refits=PoolRefits(refits))
        warm(controller, job, time.time() - WINDOW_S)
        refits.submit(lambda: None).result()  # the single refit thread is idle: refits are not in the figures
        monitor = PrometheusMonitor(config.monitor, config.controller.utilization_signal)
        store = SqliteKnowledgeStore(workdir / f"knowledge-{executors}.sqlite")
        loop = Loop(controller, monitor, DryRunActuator(live=executors), store, SystemClock())
        times: dict[str, list[float]] = {p: [] for p in (*PARTS, "loop")}
        skipped, models = 0, set()
        for _ in range(MEASURED_STEPS):
            refits.submit(lambda: None).result()
            loop._window_end_s = None  # every step observes a full loop interval, as at steady state
            started = time.perf_counter()
            result = loop.step()
            times["loop"].append(time.perf_counter() - started)
            for part in PARTS:
                times[part].append(result.timings_s.get(part, 0.0))
            skipped += result.monitor_error is not None
            tick = result.decision.evidence.tick
            models.add(tick.forecast_model if tick is not None else result.decision.reason.value)
        if skipped:
            print(f"  warning: {skipped} steps could not observe: {result.monitor_error}")
        print(f"  {executors} executors: forecast models used: {', '.join(sorted(models))}")
        monitor.close()
        return times
    finally:
        refits.shutdown(wait=True)


def main() -> int:
    if find_binary() is None:
        print("loop_speed: no prometheus binary (Debian package `prometheus`); skipped")
        return 0
    servers: list[PrometheusServer] = []
    exporters: list[Exporter] = []
    with tempfile.TemporaryDirectory(prefix="loop-speed-") as tmp:
        try:
            jobs = {}
            for n in SIZES:
                jobs[n] = SyntheticJob(executors=n, partitions=24)
                exporters.append(serve(jobs[n]))
                servers.append(start_prometheus([exporters[-1].target], workdir=Path(tmp) / f"prom-{n}"))
            print(f"collecting {WINDOW_S + 6:.0f} s of 1-s scrapes ...", flush=True)
            time.sleep(WINDOW_S + 6)  # the window must be filled by real scrapes
            print(
                f"loop step over {MEASURED_STEPS} steps, {WINDOW_S:.0f}-s window at 1-s steps "
                "(ms, p50 / p95; refits excluded)"
            )
            for n, prometheus in zip(SIZES, servers, strict=True):
                times = measure(n, prometheus, jobs[n], Path(tmp))
                cells = "   ".join(
                    f"{p} {np.percentile(v, 50) * 1e3:6.1f} / {np.percentile(v, 95) * 1e3:6.1f}"
                    for p, v in times.items()
                )
                print(f"{n:>4} executors: {cells}", flush=True)
        finally:
            for server in servers:
                server.stop()
            for exporter in exporters:
                exporter.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
