"""The native query set (monitor.metrics native): which queries it replaces, what it keeps, that every one parses,
the config rules around it, the local log's kafka-exporter stand-in and the scrape config for Spark's paths."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark.config import ConfigError, parse_config
from daedalus_spark.monitor.assemble import BATCH_QUERIES, QUERIES
from daedalus_spark.monitor.native import NATIVE_QUERIES
from daedalus_spark.monitor.prometheus import queries
from daedalus_spark.monitor.promserver import render_config
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.logexporter import LogOffsetsCollector
from tests.conftest import ROOT

URL = "http://prometheus:9090"


def native(**monitor):
    section = {"prometheus_url": URL, "rate_window_s": 120, "metrics": "native", **monitor}
    return parse_config({"monitor": section}).monitor


@pytest.mark.parametrize(
    "signal,monitor,expected",
    [
        pytest.param("busy_time", {}, {"utilization": "metrics_executor_totalDuration"}, id="busy-from-spark"),
        pytest.param("cpu", {}, {"utilization": "daedalus_spark_executor_cpu_seconds"}, id="cpu-keeps-its-query"),
        pytest.param(
            "busy_time", {"query_lag": "sum(my_lag{$selector})"}, {"lag": "sum(my_lag{})"}, id="a-set-query-wins"
        ),
        pytest.param(
            "busy_time",
            {"source_labels": {"topic": "orders"}, "consumer_group": "etl"},
            {"workload": '{topic="orders"}', "lag": 'kafka_consumergroup_lag{consumergroup="etl",topic="orders"}'},
            id="source-and-group",
        ),
        pytest.param("busy_time", {}, {"lag": 'kafka_consumergroup_lag{consumergroup!="",}'}, id="any-group"),
        pytest.param(
            "busy_time",
            {"job_labels": {"namespace": "jobs"}},
            {"executors": 'count(metrics_executor_totalCores{executor_id!="driver",namespace="jobs"})'},
            id="job-labels",
        ),
    ],
)
def test_native_queries(signal, monitor, expected):
    got = queries(native(**monitor), signal)
    assert set(QUERIES) <= set(got) and not set(BATCH_QUERIES) & set(got)  # Spark has no batch counters
    for name, fragment in expected.items():
        assert fragment in got[name], got[name]
    assert not any("$" in q for q in got.values())  # every placeholder substituted


def test_a_config_that_spells_out_the_agent_defaults_still_gets_the_native_set():
    """deploy/daedalus.yaml (validate-config's output) lists every query at its default value."""
    spelled = yaml.safe_load((ROOT / "deploy" / "daedalus.yaml").read_text())
    spelled["monitor"] |= {"prometheus_url": URL, "rate_window_s": 120, "metrics": "native"}
    assert queries(parse_config(spelled).monitor, "busy_time") == queries(native(), "busy_time")


def test_the_agent_set_is_unchanged_by_the_native_keys():
    agent = parse_config({"monitor": {"prometheus_url": URL, "rate_window_s": 5, "scrape_interval_s": 1}}).monitor
    with_source = agent.model_copy(update={"source_labels": {"topic": "t"}, "consumer_group": "g"})
    assert (
        queries(with_source, "busy_time")
        == queries(agent, "busy_time")
        == queries(parse_config({}).monitor, "busy_time")
    )
    assert "daedalus_spark_" in queries(agent, "busy_time")["throughput"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed: queries unparsed")
@pytest.mark.parametrize("labels", [pytest.param({}, id="no-labels"), pytest.param({"namespace": "a"}, id="labels")])
def test_every_native_query_parses(labels, tmp_path):
    exprs = [
        q
        for source in ({}, {"topic": "t"})
        for signal in ("cpu", "busy_time")
        for q in queries(native(source_labels=source, job_labels=labels), signal).values()
    ]
    rules = [{"record": f"q:{i}", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "native.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "native", "rules": rules}]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "monitor,message",
    [
        pytest.param({"metrics": "native"}, "monitor.metrics native needs monitor.prometheus_url", id="no-server"),
        pytest.param({"metrics": "spark"}, "monitor.metrics", id="unknown"),
        pytest.param({"prometheus_url": URL, "source_labels": {"a-b": "x"}}, "monitor.source_labels", id="label"),
        pytest.param({"prometheus_url": URL, "consumer_group": 3}, "monitor.consumer_group", id="group-type"),
    ],
)
def test_bad_native_settings_name_the_key(monitor, message):
    with pytest.raises(ConfigError) as err:
        parse_config({"monitor": {"rate_window_s": 120, **monitor}})
    assert message in err.value.one_line()


def test_native_queries_name_only_sparks_and_kafka_exporters_series():
    names = set()
    for template in NATIVE_QUERIES.values():
        names |= set(re.findall(r"\b(metrics_\w+|kafka_\w+)", template))
    assert "_driver_spark_streaming_" in NATIVE_QUERIES["throughput"]  # matched by __name__: it holds the query name
    assert names == {
        "metrics_executor_totalDuration_seconds_total",
        "metrics_executor_totalCores",
        "kafka_topic_partition_current_offset",
        "kafka_consumergroup_lag",
    }


def test_log_exporter_serves_kafka_exporters_series_of_the_local_log(tmp_path):
    log = LocalLog(tmp_path)
    log.create_topic("words", 2)
    log.append("words", 0, ["a"] * 5)
    log.append("words", 1, ["b"] * 3)
    log.commit("words", "spark", {0: 4, 1: 0})
    registry = CollectorRegistry()
    registry.register(LogOffsetsCollector(log, ["words"], ["spark", "other"]))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(generate_latest(registry).decode())
        for s in f.samples
    }
    assert samples[("kafka_topic_partition_current_offset", (("partition", "0"), ("topic", "words")))] == 5
    assert samples[("kafka_topic_partition_current_offset", (("partition", "1"), ("topic", "words")))] == 3
    lag = {
        (dict(k)["consumergroup"], dict(k)["partition"]): v
        for (n, k), v in samples.items()
        if n == "kafka_consumergroup_lag"
    }
    assert lag == {("spark", "0"): 1, ("spark", "1"): 3, ("other", "0"): 5, ("other", "1"): 3}  # = LocalLog.lag
    assert {p: v for (g, p), v in lag.items() if g == "spark"} == {
        str(p): v for p, v in log.lag("words", "spark").items()
    }


def test_scrape_config_reads_sparks_two_paths_as_jobs_of_their_own():
    config = yaml.safe_load(
        render_config(
            [
                "127.0.0.1:9308",
                "http://127.0.0.1:4040/metrics/executors/prometheus",
                "http://127.0.0.1:4040/metrics/prometheus",
            ],
            1.0,
        )
    )
    jobs = {
        j["job_name"]: (j.get("metrics_path", "/metrics"), j["static_configs"][0]["targets"])
        for j in config["scrape_configs"]
    }
    assert jobs == {
        "daedalus": ("/metrics", ["127.0.0.1:9308"]),
        "daedalus/metrics/executors/prometheus": ("/metrics/executors/prometheus", ["127.0.0.1:4040"]),
        "daedalus/metrics/prometheus": ("/metrics/prometheus", ["127.0.0.1:4040"]),
    }
