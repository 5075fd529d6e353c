"""The local cluster's per-executor CPU: cgroup files read right, executors mapped from the workers' /json/."""

from __future__ import annotations

from pathlib import Path

import pytest

from daedalus_spark.sparkcluster.cgroups import CpuGroup
from daedalus_spark.sparkcluster.cpu_exporter import ExecutorCpu, ExecutorCpuCollector, executors_on_worker


@pytest.mark.parametrize(
    "state,app,ids",
    [
        pytest.param({"executors": [{"id": 0, "appid": "a"}, {"id": 3, "appid": "b"}]}, None, ["0", "3"], id="all"),
        pytest.param({"executors": [{"id": 0, "appid": "a"}, {"id": 3, "appid": "b"}]}, "b", ["3"], id="one-app"),
        pytest.param({"executors": []}, None, [], id="none"),
        pytest.param({"executors": [{"appid": "a"}, "junk"]}, None, [], id="malformed-entries"),
        pytest.param(None, None, [], id="worker-did-not-answer"),
        pytest.param(["not", "a", "dict"], None, [], id="not-an-object"),
    ],
)
def test_executors_on_worker(state, app, ids):
    assert executors_on_worker(state, app) == ids


def v1_group(tmp_path: Path, usage_ns: str) -> CpuGroup:
    (tmp_path / "cpuacct.usage").write_text(usage_ns)
    return CpuGroup(tmp_path, "v1", cpus=0.25, acct_path=tmp_path)


def test_usage_from_v1_and_v2_files(tmp_path):
    assert v1_group(tmp_path, "2500000000\n").usage_s() == 2.5
    (tmp_path / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert CpuGroup(tmp_path, "v2").usage_s() == 1.5
    (tmp_path / "cpuacct.usage").write_text("garbage")
    assert CpuGroup(tmp_path, "v1", acct_path=tmp_path).usage_s() is None  # an unreadable file misses a scrape


def test_collector_labels_the_worker_cgroup_with_its_executor(tmp_path):
    group = v1_group(tmp_path, "4000000000")
    states = {"http://w0": {"executors": [{"id": 7, "appid": "app"}]}}
    collector = ExecutorCpuCollector(lambda: [ExecutorCpu("http://w0", group)], fetch_state=states.get)
    samples = {(s.name, s.labels["executor_id"]): s.value for f in collector.collect() for s in f.samples}
    assert samples == {
        ("daedalus_spark_executor_cpu_seconds_total", "7"): 4.0,
        ("daedalus_spark_executor_cpu_limit_cores", "7"): 0.25,
    }
