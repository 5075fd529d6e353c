"""Spark test: the live demo as `make demo` runs it (deploy/demo.yaml, the default planner, Kafka) needs
autoscaling — its trough runs below the maximum, its peak at the maximum — and counts every word exactly. (With the
rise foreseen from the topic's earlier cycles the plan keeps 2 through the short trough rather than scale in for
20-40 s: docs/results/2026-11-29-topic-history.md.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from daedalus_spark.demo.live import DemoPlan, run_demo

pytestmark = [pytest.mark.spark, pytest.mark.demo]


def test_the_demo_runs_its_trough_below_the_maximum_its_peak_at_the_maximum_and_counts_exactly(tmp_path: Path) -> None:
    plan = DemoPlan()  # the shipped sizes: deploy/demo.yaml's demo: section
    code = run_demo(tmp_path, plan, log=print)
    summary = json.loads((tmp_path / "summary.json").read_text())
    figures = {k: summary[k] for k in ("executors_at_trough", "executors_at_peak", "scale_outs", "scale_ins")}
    assert summary["records_exact"], (summary["records_in"], summary["records_out"])
    assert summary["executors_at_trough"] < plan.max_scaleout, figures
    assert summary["executors_at_peak"] == plan.max_scaleout, figures
    assert code == 0, "a demo check failed (printed on stderr)"
