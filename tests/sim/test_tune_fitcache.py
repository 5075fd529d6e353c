"""tune with the fit cache, and with the model memo, gives byte for byte the JSON and the rows it gives without: the
CLI end to end, its Spark job replaced by the same tasks run here one after the other (partition by partition, in
Spark's order), as a reused Python worker runs them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daedalus_spark.cli import main
from daedalus_spark.sim.evaluate import compress_trace
from daedalus_spark.sim.suite import get_shape, write_trace
from daedalus_spark.tune import spark, task
from daedalus_spark.tune.partition import partitions
from daedalus_spark.tune.task import (
    Setting,
    WindowRow,
    WindowTask,
    fit_cache_counts,
    model_memo_counts,
    simulate_window,
)

# 40 min of history: two 15-min windows to choose on, 10 min held out, each after a 10-min lead-in (the forecaster's
# first fit comes 10 min in); two candidates besides the config, which plan differently and forecast alike.
GRID = """
seed: 3
split: {holdout_s: 600, holdout_max_ratio: 0.3, window_s: 900, lead_in_s: 600, min_window_s: 600}
knobs:
  controller.horizon.target_share_ratio: [0.5, 0.9]
"""


def _in_process(entries: int, fits: list[tuple[int, int]], *, memo_entries: int = 0) -> Any:
    """The tasks here; `fits` gets the fit cache's (hits, misses), or the model memo's with `memo_entries`."""

    def run_tasks(tasks: list[WindowTask], workload: np.ndarray, setting: Setting, **_: Any) -> list[WindowRow]:
        setting = dataclasses.replace(setting, fit_cache_entries=entries, model_memo_entries=memo_entries)
        counts = model_memo_counts if memo_entries else fit_cache_counts
        before = counts()
        rows = [simulate_window(t, workload, setting) for part in partitions(tasks, 1) for t in part]
        fits.append((counts()[0] - before[0], counts()[1] - before[1]))
        return sorted(rows, key=lambda r: (r.candidate, r.window))

    return run_tasks


def _tune(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, bytes]:
    out = tmp_path / name
    argv = ["tune", "--grid", str(tmp_path / "grid.yaml"), "--trace", str(tmp_path / "trace.csv")]
    argv += ["--job-model", "local", "--master", "local[1]", "--out", str(out), "--json", "--no-progress"]
    assert main(argv) == 0
    return capsys.readouterr().out, (out / "rows.csv").read_bytes()


def test_tune_json_and_rows_are_byte_identical_with_and_without_the_fit_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_trace(str(tmp_path / "trace.csv"), compress_trace(get_shape("fast_cycle").generate(1), 4)[:2400])
    (tmp_path / "grid.yaml").write_text(GRID)
    monkeypatch.setattr(task, "_fit_cache", None)  # a fresh worker
    fits: list[tuple[int, int]] = []
    monkeypatch.setattr(spark, "run_tasks", _in_process(0, fits))
    without = _tune(tmp_path, "without", capsys)
    monkeypatch.setattr(spark, "run_tasks", _in_process(256, fits))
    with_cache = _tune(tmp_path, "with", capsys)
    assert fits[0] == (0, 0)  # off: no cache at all
    hits, misses = fits[1]
    # 3 candidates x 3 windows forecast the same workload: each window's fits are run once, by candidate 0.
    assert misses > 0 and hits == 2 * misses, fits
    assert with_cache[0] == without[0]  # tune --json
    assert with_cache[1] == without[1]  # rows.csv


def test_tune_json_and_rows_are_byte_identical_with_and_without_the_model_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_trace(str(tmp_path / "trace.csv"), compress_trace(get_shape("fast_cycle").generate(1), 4)[:2400])
    # Two interval levels: the first candidate at 0.8 asks forecasts the config's models never gave, so its models
    # replay what they skipped and compute; the next one at 0.8 finds them.
    (tmp_path / "grid.yaml").write_text(GRID + "  forecast.interval_level: [0.8, 0.9]\n")
    monkeypatch.setattr(task, "_fit_cache", None)  # a fresh worker
    monkeypatch.setattr(task, "_model_memo", None)
    counts: list[tuple[int, int]] = []
    monkeypatch.setattr(spark, "run_tasks", _in_process(0, counts))
    without = _tune(tmp_path, "without", capsys)
    monkeypatch.setattr(spark, "run_tasks", _in_process(256, counts, memo_entries=50_000))  # as tune runs
    with_memo = _tune(tmp_path, "with", capsys)
    assert counts[0] == (0, 0)  # off: no memo at all (and no fit cache)
    hits, misses = counts[1]
    # 5 candidates x 3 windows: the config's models compute, and each level's first candidate its forecasts.
    assert hits > misses > 0, counts
    assert task.model_memo_counts()[2] > 0  # some skipped updates were replayed
    assert with_memo[0] == without[0]  # tune --json
    assert with_memo[1] == without[1]  # rows.csv
