"""`capacity`'s throughput window comes from what the data says (--utilization-window, or a `# window:` line above
the utilization header), else it is assumed aligned and said on one line; counters are refused; zone-less ISO times
are UTC. Oracle: a job whose executors carry throughput = a + b x utilization, true capacity a + b."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from daedalus_spark.cli import main
from daedalus_spark.config import CapacityConfig
from daedalus_spark.monitor.files import InputFileError, read_metric_csv, time_step_s
from daedalus_spark.report.capacity_report import capacity_from_csv

SECONDS = 1800
# a, b per executor: capacity a + b at utilization 1; equal executors with equal load shares, so the job's capacity
# is their sum (no skew to account for)
LINES = {"e1": (500.0, 33_000.0), "e2": (500.0, 33_000.0)}
TRUE_CAPACITY = sum(a + b for a, b in LINES.values())  # 67,000 records/s


def _job(seed: int = 7) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per-second utilization and throughput from the same second: a load swinging 0.2..0.8; 2 % noise on
    throughput, 0.005 on utilization."""
    rng = np.random.default_rng(seed)
    t = np.arange(SECONDS)
    util, thr = {}, {}
    load = 0.5 + 0.3 * np.sin(2 * np.pi * t / 600)
    for name, (a, b) in LINES.items():
        u = load + rng.normal(0, 0.005, SECONDS)
        util[name] = np.clip(u, 0.05, 1.0)
        thr[name] = (a + b * util[name]) * (1 + rng.normal(0, 0.02, SECONDS))
    return util, thr


def _write(path: Path, columns: dict[str, np.ndarray], *, head: str = "", iso: bool = False) -> Path:
    times = [f"2026-03-29T00:{m:02d}:{s:02d}" for m, s in divmod(np.arange(SECONDS), 60)] if iso else range(SECONDS)
    rows = [f"{t}," + ",".join(f"{columns[n][i]:.6f}" for n in LINES) for i, t in enumerate(times)]
    path.write_text(head + "time," + ",".join(LINES) + "\n" + "\n".join(rows) + "\n")
    return path


def _error(report_capacity: float) -> float:
    return abs(report_capacity / TRUE_CAPACITY - 1)


def test_aligned_one_second_data_is_within_two_percent_by_default_and_says_what_it_assumed(tmp_path, capsys) -> None:
    util, thr = _job()
    u, t = _write(tmp_path / "u.csv", util), _write(tmp_path / "t.csv", thr)
    assert main(["capacity", "--utilization", str(u), "--throughput", str(t), "--json"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert _error(data["total_capacity"]) < 0.02, data["total_capacity"]
    assert data["utilization_window_s"] == 0 and data["utilization_window_from"] == "assumed"
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "assumed the utilization and throughput rows are aligned" in lines[0], out.err


def test_a_window_line_in_the_utilization_file_aligns_a_one_minute_rate(tmp_path, capsys) -> None:
    util, thr = _job()
    minute = {n: pd.Series(v).rolling(60, min_periods=1).mean().to_numpy() for n, v in util.items()}
    u = _write(tmp_path / "u.csv", minute, head="# exported: cpu rate over 1m\n# window: 60s\n")
    t = _write(tmp_path / "t.csv", thr)
    said = capacity_from_csv(u, t, CapacityConfig())
    assert (said.window_s, said.window_from, said.assumption()) == (60.0, "file", None)
    unaligned = capacity_from_csv(u, t, CapacityConfig(), utilization_window_s=0)
    assert _error(said.table.current_per_s) < 0.02, said.table.current_per_s
    assert _error(unaligned.table.current_per_s) > _error(said.table.current_per_s)
    option = capacity_from_csv(u, t, CapacityConfig(), utilization_window_s=60)
    assert (option.window_from, option.table.current_per_s) == ("option", said.table.current_per_s)


@pytest.mark.parametrize(
    ("line", "seconds"),
    [("# window: 60s", 60.0), ("# window: 1m", 60.0), ("# window_s: 15", 15.0), ("#Window = 500ms", 0.5)],
    ids=["seconds", "minutes", "window_s", "milliseconds"],
)
def test_window_lines(tmp_path, line, seconds) -> None:
    (tmp_path / "u.csv").write_text(f"{line}\ntime,e1\n0,0.5\n1,0.6\n")
    assert read_metric_csv(tmp_path / "u.csv").window_s == seconds


def test_a_window_line_that_is_not_a_duration_names_its_line(tmp_path) -> None:
    (tmp_path / "u.csv").write_text("# note\n# window: a minute\ntime,e1\n0,0.5\n")
    with pytest.raises(InputFileError, match=r"u.csv:2: window 'a minute': expected a duration like 60s"):
        read_metric_csv(tmp_path / "u.csv")


def test_a_counter_exported_as_throughput_is_refused_naming_the_file(tmp_path, capsys) -> None:
    util, thr = _job()
    totals = {n: np.cumsum(v) for n, v in thr.items()}
    u, t = _write(tmp_path / "u.csv", util), _write(tmp_path / "t.csv", totals)
    assert main(["capacity", "--utilization", str(u), "--throughput", str(t)]) == 2
    err = capsys.readouterr().err
    assert f"{t}: every throughput column rises at nearly every row, like a counter" in err, err


def test_iso_times_without_a_zone_are_utc_whatever_the_machines_zone(tmp_path, monkeypatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Europe/Berlin")  # 2026-03-29 02:00 does not exist there (DST)
    time.tzset()
    try:
        times = ["2026-03-29T01:59:00", "2026-03-29T02:00:00", "2026-03-29T02:01:00"]
        assert time_step_s(times) == 60.0
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_two_options_for_the_same_window_are_refused(tmp_path, capsys) -> None:
    util, thr = _job()
    u, t = _write(tmp_path / "u.csv", util), _write(tmp_path / "t.csv", thr)
    argv = ["capacity", "--utilization", str(u), "--throughput", str(t), "--smooth-throughput", "4"]
    assert main([*argv, "--utilization-window", "60"]) == 2
    assert "--smooth-throughput and --utilization-window both set" in capsys.readouterr().err
