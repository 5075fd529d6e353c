"""Test helpers for the Spark tests: bounded polling, reading the agent's HTTP endpoint, and asking a submitted
driver whether its agent answers and how many executors it has live."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark import waiting
from daedalus_spark.agent.driverui import DriverUiReader, fetch_json, live_executors
from daedalus_spark.sparkcluster.plugin import SubmittedJob


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0, step_s: float = 0.2) -> None:
    waiting.wait_until(condition, what, timeout_s, interval_s=step_s)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Samples of /metrics keyed by (sample name, sorted labels)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and all((k, x) in ls for k, x in labels.items()))


def request(url: str, method: str = "GET", body: Any = None, token: str | None = None) -> tuple[int, dict[str, Any]]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def answering(job: SubmittedJob) -> bool:
    """The driver's agent answers /healthz; an AssertionError naming the log once the driver has exited."""
    if not job.running():
        raise AssertionError(f"the driver exited with {job.process.returncode}: see {job.log}")
    try:
        return request(f"{job.agent_url}/healthz")[0] == 200
    except OSError:
        return False


def driver_live(job: SubmittedJob) -> int:
    """Live executors as the driver's own REST API lists them (not through the agent); -1 while a driver too busy
    to answer within 30 s, or still starting up (its UI answers in plain text then), cannot say."""
    try:
        app_id = fetch_json(f"{job.ui_url}/api/v1/applications", 30)[0]["id"]
        executors = fetch_json(f"{job.ui_url}/api/v1/applications/{app_id}/allexecutors", 30)
    except (OSError, ValueError):
        return -1
    return len(live_executors(DriverUiReader._executor(e) for e in executors))


def stop_leftover_spark_session() -> None:
    """Stop the session an earlier test module left active: getOrCreate would hand it back instead of a new one on
    this module's cluster."""
    from pyspark.sql import SparkSession

    leftover = SparkSession.getActiveSession()
    if leftover is not None:
        leftover.stop()
