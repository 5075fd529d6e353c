"""Offline inputs: trace and metric files (with their errors) and the `capacity` command."""

import json
import subprocess
import sys

import pytest

from daedalus_spark.monitor.files import BUNDLED_TRACES, InputFileError, read_metric_csv, read_trace
from tests.conftest import MEASUREMENTS, ROOT


@pytest.mark.parametrize(
    "pipeline,rows,peak", [("wordcount", 21600, 40000), ("ysb", 21601, 400000), ("traffic", 25000, 99989)]
)
def test_each_pipelines_bundled_trace_reads_with_any_line_ends(pipeline, rows, peak):
    trace = read_trace(BUNDLED_TRACES[pipeline])  # the generator's and the demo's defaults
    assert (len(trace), trace.max()) == (rows, peak)


@pytest.mark.parametrize(
    "content,line,problem",
    [
        pytest.param(b"second|count\n0|5\n1|x\n", 3, "expected two numbers", id="not-a-number"),
        pytest.param(b"0|5\r1|6\r3|7\r", 3, "second 3 out of order (expected 2)", id="gap-with-cr-line-ends"),
        pytest.param(b"0|5\n1|-6\n", 2, "count must be a finite number >= 0", id="negative"),
        pytest.param(b"0,5\n", 1, "expected 'second|count'", id="wrong-separator"),
        pytest.param(b"0|nan\n", 1, "finite", id="nan"),
    ],
)
def test_malformed_traces_name_file_and_line(tmp_path, content, line, problem):
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    with pytest.raises(InputFileError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and problem in str(err.value)


def test_empty_trace_and_missing_file(tmp_path):
    (tmp_path / "e.csv").write_text("second|count\n")
    with pytest.raises(InputFileError, match="no data rows"):
        read_trace(tmp_path / "e.csv")
    with pytest.raises(InputFileError, match="cannot read"):
        read_trace(tmp_path / "nope.csv")


def test_metric_csv_reads_quoted_headers_and_blank_cells(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text('"Time","a","b"\n2023-01-01 00:00:00,0.5,\n')
    table = read_metric_csv(path)
    assert list(table.columns) == ["a", "b"] and table.columns["a"][0] == 0.5
    path.write_text('"Time","a"\nt,0.5,0.7\n')
    with pytest.raises(InputFileError, match=r"m.csv:2: expected 2 fields, got 3"):
        read_metric_csv(path)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "daedalus_spark.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_capacity_command_json_on_the_skew_data():
    result = cli(
        "capacity",
        "--utilization",
        str(MEASUREMENTS / "data_skew_cpu_12.csv"),
        "--throughput",
        str(MEASUREMENTS / "data_skew_throughput_12.csv"),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["executors"]) == 12 and len(data["per_scaleout"]) == 12
    assert data["per_scaleout"]["12"] == pytest.approx(data["total_capacity"])
    assert sum(w["capacity"] for w in data["executors"].values()) == pytest.approx(data["total_capacity"])


def test_capacity_command_text_and_errors(tmp_path):
    text = cli(
        "capacity",
        "--utilization",
        str(MEASUREMENTS / "assumptions_cpu_1.csv"),
        "--throughput",
        str(MEASUREMENTS / "assumptions_throughput_1.csv"),
        "--max-scaleout",
        "4",
    )
    assert text.returncode == 0 and "capacity per scale-out" in text.stdout and "4: " in text.stdout
    mismatched = cli(
        "capacity",
        "--utilization",
        str(MEASUREMENTS / "data_skew_cpu_12.csv"),
        "--throughput",
        str(MEASUREMENTS / "assumptions_throughput_1.csv"),
    )
    assert mismatched.returncode == 2 and "time column differs" in mismatched.stderr
    bad = tmp_path / "u.csv"
    bad.write_text('"Time","w"\nt1,0.5\nt2,high\n')
    broken = cli("capacity", "--utilization", str(bad), "--throughput", str(bad))
    assert broken.returncode == 2 and f"{bad}:3: column 'w': not a number" in broken.stderr


def test_forecast_evaluate_command_json(tmp_path):
    seconds = range(1800)
    trace = tmp_path / "t.csv"
    trace.write_text("second|count\r\n" + "".join(f"{s}|{1000 + s // 3}\r\n" for s in seconds))
    result = cli("forecast", "evaluate", "--trace", str(trace), "--horizon", "300", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"wape_median", "wape_p90", "fallback_share", "fit_seconds", "update_seconds_p95"} <= set(data)
    assert 0 <= data["fallback_share"] <= 1 and data["wape_median"] < 0.05  # a straight ramp is easy


def test_forecast_evaluate_rejects_a_malformed_trace(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("second|count\n0|10\n1|ten\n")
    result = cli("forecast", "evaluate", "--trace", str(trace))
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"daedalus-spark: error: {trace}:3: expected two numbers 'second|count', got '1|ten'"
    )
