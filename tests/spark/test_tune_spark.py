"""`daedalus-spark tune` end to end on local[2]: a tiny grid on a short trace; every row Spark returns equals what
the simulator gives for the same candidate and window run directly here, and the answer adds those rows up."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark")

from daedalus_spark.cli import main
from daedalus_spark.config import Config
from daedalus_spark.sim.evaluate import compress_trace, controller_config
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.metrics import summarize
from daedalus_spark.sim.policies import make_policy
from daedalus_spark.sim.runner import make_setup, run_policy
from daedalus_spark.sim.suite import get_shape, write_trace
from daedalus_spark.tune.task import window_seed

pytestmark = pytest.mark.spark

SEED = 5
GRID = f"""
seed: {SEED}
split: {{holdout_s: 600, holdout_max_ratio: 0.4, window_s: 600, lead_in_s: 0, min_window_s: 600}}
knobs:
  capacity.unobserved_margin_ratio: [0.05]
"""


def test_tune_rows_equal_the_simulator_run_directly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = compress_trace(get_shape("fast_cycle").generate(1), 4)[:1800]
    write_trace(str(tmp_path / "trace.csv"), workload)
    (tmp_path / "grid.yaml").write_text(GRID)
    (tmp_path / "job.yaml").write_text("engine: continuous\n")
    out = tmp_path / "out"
    argv = ["tune", "--grid", str(tmp_path / "grid.yaml"), "--trace", str(tmp_path / "trace.csv")]
    argv += ["--job-model", str(tmp_path / "job.yaml"), "--master", "local[2]", "--out", str(out), "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert "tune: 6/6 simulations in " in captured.err  # progress was shown (one line: stderr is not a terminal)

    with (out / "rows.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["candidate"]), int(r["window"]), r["part"]) for r in rows] == [
        (c, w, "select" if w < 2 else "holdout") for c in (0, 1) for w in range(3)
    ]
    peak = float(np.max(workload))
    for row in rows:
        config = (
            Config()
            if row["candidate"] == "0"
            else Config().model_copy(
                update={"capacity": Config().capacity.model_copy(update={"unobserved_margin_ratio": 0.05})}
            )
        )
        config = controller_config(config, JobModel())
        start, end = int(row["start_s"]), int(row["end_s"])
        setup = make_setup(
            workload[start:end], JobModel(), config, window_seed(SEED, int(row["window"])), sized_for_per_s=peak
        )
        run = run_policy(setup, make_policy("daedalus", config))
        m = summarize(run, static_executors=12, oracle_executor_hours=1.0, target_recovery_s=600, target_latency_s=30)
        assert float(row["executor_hours"]) == pytest.approx(m.executor_hours, abs=1e-12), row
        assert int(row["rescales"]) == m.rescales and int(row["recovery_violations"]) == m.recovery_violations
        assert int(row["behind_s"]) == m.behind_s and float(row["latency_p95_s"]) == pytest.approx(m.latency_p95_s)

    for cand in result["candidates"]:
        mine = [r for r in rows if int(r["candidate"]) == cand["candidate"]]
        for part in ("select", "holdout"):
            wh = sum(float(r["executor_hours"]) for r in mine if r["part"] == part)
            assert cand[part]["executor_hours"] == pytest.approx(wh)
    assert sorted(p.name for p in out.iterdir()) == [
        "index.html",
        "pareto.png",
        "recommended.diff",
        "recommended.yaml",
        "rows.csv",
        "tune.json",
    ]
