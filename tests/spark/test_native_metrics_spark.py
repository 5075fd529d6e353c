"""Spark test: the native query set (monitor.metrics native) against a real Spark driver's own endpoints.

WordCount runs on a local standalone cluster (2 executors) with Spark's PrometheusServlet and executor metrics on,
the generator feeds the local log at a fixed rate, the log's kafka-exporter stand-in serves end offsets and lag, and
a real Prometheus scrapes the driver's two endpoints and the exporter. The agent runs in the same driver, scraped by
the same Prometheus, so both query sets observe the same window of the same job.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from daedalus_spark.agent import Agent, AgentConfig, start_agent
from daedalus_spark.config import parse_config
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.native import SCRAPE_PATHS, SPARK_CONF
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import logexporter, wordcount
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import wait_until
from tests.spark.jobs import TOPIC, gen_stop, generate

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(find_binary() is None, reason="no prometheus binary (apt-get install prometheus)"),
]
RATE_PER_S = 300.0


@dataclass
class NativeJob:
    prometheus: PrometheusServer
    agent: Agent
    started_s: float


def monitor(prometheus: PrometheusServer, metrics: str) -> PrometheusMonitor:
    section = {
        "prometheus_url": prometheus.url,
        "metrics": metrics,
        "step_s": 1,
        "rate_window_s": 5,
        "scrape_interval_s": 1,
        "source_labels": {"topic": TOPIC},
        "consumer_group": "spark",
    }
    return PrometheusMonitor(parse_config({"monitor": section}).monitor, "busy_time")


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NativeJob]:
    root = tmp_path_factory.mktemp("native")
    log = LocalLog(root / "log")
    log.create_topic(TOPIC, 2)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    exporter = logexporter.serve(log, [TOPIC], ["spark"], 0)
    generator = None
    try:
        with LocalCluster(workers=2, memory_per_worker="1g") as cluster:
            spark = cluster.session("daedalus-test-native", **SPARK_CONF)
            agent, query, prometheus = None, None, None
            try:
                agent = start_agent(spark, AgentConfig(port=0, max_executors=2, poll_s=1.0))
                frame = wordcount.build(spark, read_values(spark, source="local", topic=TOPIC, path=str(root / "log")))
                query = write_stream(
                    frame,
                    sink="noop",
                    name="wordcount",
                    output_mode="update",
                    checkpoint=str(root / "ckpt"),
                    trigger_s=1,
                ).start()
                generator = generate(log, seconds=600, rate=RATE_PER_S, seed=3)
                ui = spark.sparkContext.uiWebUrl
                targets = [f"127.0.0.1:{exporter.server_port}", f"127.0.0.1:{agent.port}"]
                prometheus = start_prometheus(
                    [*targets, *(f"{ui}{path}" for path in SCRAPE_PATHS)], workdir=Path(root / "prometheus")
                )
                yield NativeJob(prometheus, agent, time.time())
            finally:
                if prometheus is not None:
                    prometheus.stop()
                if query is not None:
                    query.stop()
                if agent is not None:
                    agent.stop()
                spark.stop()
    finally:
        if generator is not None:
            gen_stop(generator[1], generator[0])
        exporter.shutdown()


def observe(job: NativeJob, metrics: str, window_s: float = 20.0) -> Observation:
    source = monitor(job.prometheus, metrics)
    try:
        end = float(int(time.time()) - 2)  # the last scrapes are in
        return source.observe(start_s=end - window_s, end_s=end)
    finally:
        source.close()


def steady(job: NativeJob) -> Observation:
    """A window in which both executors ran the job throughout, a minute after the first scrapes, caught up with
    the backlog the slow first batches left (within 3 s of the rate)."""

    def ready() -> bool:
        try:
            obs = observe(job, "native")
        except MonitorError:  # not yet: a query without series for the whole window
            return False
        full = obs.scaleout == 2 and len(obs.workload_per_s) >= 15 and min(obs.workload_per_s) > 0
        return full and obs.uptime_s >= 60 and obs.consumer_lag_records < 3 * RATE_PER_S

    wait_until(ready, "a full native window with 2 executors, caught up", timeout_s=300, step_s=2.0)
    return observe(job, "native")


def test_the_native_query_set_observes_the_job_from_sparks_own_endpoints(job: NativeJob) -> None:
    obs = steady(job)
    assert obs.scaleout == 2 and {e.executor_id for e in obs.executors} == {"0", "1"}
    workload = sum(obs.workload_per_s) / len(obs.workload_per_s)
    assert workload == pytest.approx(RATE_PER_S, rel=0.2)  # the log's end offsets grow at the generator's rate
    job_throughput = [sum(col) for col in zip(*(e.throughput_per_s for e in obs.executors), strict=True)]
    assert sum(job_throughput) / len(job_throughput) == pytest.approx(workload, rel=0.3), obs  # keeping up
    assert all(0 < u <= 1.0 for e in obs.executors for u in e.utilization_ratio[-5:])
    assert 0 <= obs.consumer_lag_records < 20 * RATE_PER_S  # a few batches behind, not growing without bound
    assert 0 < obs.uptime_s <= time.time() - job.started_s + 600  # from the driver's first scrape, not the epoch


def test_native_and_agent_see_the_same_executors_busy_time_and_throughput(job: NativeJob) -> None:
    native = steady(job)
    agent = observe(job, "agent")
    assert native.scaleout == agent.scaleout == 2
    busy_native = {e.executor_id: sum(e.utilization_ratio) / len(e.utilization_ratio) for e in native.executors}
    busy_agent = {e.executor_id: sum(e.utilization_ratio) / len(e.utilization_ratio) for e in agent.executors}
    assert busy_native.keys() == busy_agent.keys()
    for executor_id, busy in busy_native.items():  # both are Spark's totalDuration, read by two routes
        assert busy == pytest.approx(busy_agent[executor_id], abs=0.1)

    def mean_total(obs: Observation) -> float:
        return sum(sum(e.throughput_per_s) / len(e.throughput_per_s) for e in obs.executors)

    assert mean_total(native) == pytest.approx(mean_total(agent), rel=0.2)
