"""The demo's topic history in a real Prometheus: the three earlier load cycles written with promtool are served
back by the workload query the demo's controller uses (kafka-exporter's offsets), at the rates the generator
paces, up to the second the demo's load begins."""

from __future__ import annotations

import shutil
import time

import pytest
import requests

from daedalus_spark.demo.history import PROMTOOL_TIMEOUT_S, topic_history
from daedalus_spark.demo.plan import DemoPlan
from daedalus_spark.monitor.native import NATIVE_QUERIES
from daedalus_spark.monitor.promserver import find_binary, start_prometheus, write_history

pytestmark = pytest.mark.skipif(
    find_binary() is None or shutil.which("promtool") is None,
    reason="no prometheus/promtool binaries (Debian package `prometheus`; .ci/run installs it)",
)


def test_the_workload_query_reads_the_earlier_cycles_at_the_paced_rates(tmp_path) -> None:
    plan = DemoPlan(history_cycles=3)
    pacer = plan.pacer()
    end_s = int(time.time())
    cycle_s = int(pacer.duration_s)
    lines = topic_history(pacer, topic="wordcount", partitions=plan.partitions, cycles=3, end_s=end_s)
    write_history(lines, tmp_path, timeout_s=PROMTOOL_TIMEOUT_S)
    prometheus = start_prometheus([], workdir=tmp_path)
    try:
        query = NATIVE_QUERIES["workload"].replace("$source_selector", 'topic="wordcount"')
        query = query.replace("$rate_window", "20s")
        answer = requests.get(
            f"{prometheus.url}/api/v1/query_range",
            params={"query": query, "start": end_s - 3 * cycle_s + 30, "end": end_s - 1, "step": 10},
            timeout=30,
        ).json()
    finally:
        prometheus.stop()
    assert answer["status"] == "success", answer
    (series,) = answer["data"]["result"]
    points = [(int(t), float(v)) for t, v in series["values"]]
    assert points[0][0] == end_s - 3 * cycle_s + 30 and points[-1][0] >= end_s - 10  # no gap up to the end
    for t, rate in points:
        into = (t - (end_s - 3 * cycle_s)) % cycle_s
        paced = (pacer.due(into) - pacer.due(into - 20)) / 20 if into >= 20 else None
        if paced is not None:  # a window within one cycle: the rate the generator paces, within 3 %
            assert rate == pytest.approx(paced, rel=0.03), (t, into)
