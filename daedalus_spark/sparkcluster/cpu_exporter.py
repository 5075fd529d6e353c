"""Spark harness: an executor's CPU = its worker's cgroup CPU time (JVM and Python workers), exported."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daedalus_spark import metricnames as names
from daedalus_spark.sparkcluster.cgroups import CpuGroup


def executors_on_worker(state: Any, app_id: str | None = None) -> list[str]:
    """Executor ids a standalone worker's `/json/` lists as running (for one application when `app_id` is given)."""
    if not isinstance(state, dict):
        return []
    ids = []
    for executor in state.get("executors") or []:
        if isinstance(executor, dict) and "id" in executor and (app_id is None or executor.get("appid") == app_id):
            ids.append(str(executor["id"]))
    return ids


def fetch_worker_state(web_url: str, timeout_s: float = 1.0) -> Any:
    try:
        with urllib.request.urlopen(f"{web_url.rstrip('/')}/json/", timeout=timeout_s) as response:  # noqa: S310
            return json.load(response)
    except (OSError, ValueError):
        return None  # a worker that does not answer has no executors to report this scrape


@dataclass(frozen=True)
class ExecutorCpu:
    """Where the CPU of the executor(s) on one standalone Worker is read: the Worker's web UI (which lists its
    executors) and the Worker's cgroup (which holds them)."""

    web_url: str
    group: CpuGroup


@dataclass(eq=False)  # hashable: registries keep collectors in sets
class ExecutorCpuCollector(Collector):
    """At each scrape: the cgroup CPU seconds of every worker, labelled with the executor(s) it runs.

    The counter carries the worker's total since it started; a new executor on the same worker starts its series
    there, and rate() over its own samples is still right. The worker daemon's own (idle) JVM is counted too.
    """

    workers: Callable[[], Sequence[ExecutorCpu]]  # one per live standalone Worker
    app_id: str | None = None
    fetch_state: Callable[[str], Any] = fetch_worker_state

    def collect(self) -> Iterator[Metric]:
        labels = ["executor_id", "worker"]
        cpu = CounterMetricFamily(
            names.EXECUTOR_CPU_SECONDS,
            "CPU seconds of the executor's worker cgroup (executor JVM and Python workers)",
            labels=labels,
        )
        limit = GaugeMetricFamily(names.EXECUTOR_CPU_LIMIT_CORES, "CPU quota of the executor's worker", labels=labels)
        for index, worker in enumerate(self.workers()):
            usage = worker.group.usage_s()
            if usage is None:
                continue
            for executor_id in executors_on_worker(self.fetch_state(worker.web_url), self.app_id):
                cpu.add_metric([executor_id, str(index)], usage)
                limit.add_metric([executor_id, str(index)], worker.group.cpus)
        yield from (cpu, limit)
