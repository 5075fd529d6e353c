"""Simulation tests: the `simulate` command end to end through argparse, and its error messages."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from daedalus_spark.sim.cli import register


def _write_trace(path: Path, values: np.ndarray) -> Path:
    path.write_text("second|count\n" + "".join(f"{i}|{v:.0f}\n" for i, v in enumerate(values)), encoding="utf-8")
    return path


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="daedalus-spark")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["simulate", "--no-progress", *argv])
    return int(args.handler(args))


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    t = np.arange(2 * 3600)
    return _write_trace(tmp_path / "sine.csv", 5000 + 4000 * np.sin(2 * np.pi * t / 3600))


def test_simulate_writes_json_and_report(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc = _run(
        [
            "--trace",
            str(trace),
            "--policies",
            "static:16,hpa:0.8,flink,oracle",
            "--speedup",
            "2",
            "--json",
            str(tmp_path / "r.json"),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["trace"] == "sine.csv"
    assert set(data["policies"]) == {"static:16", "hpa:0.8", "flink", "oracle"}
    for metrics in data["policies"].values():
        for key in (
            "avg_executors",
            "executor_hours",
            "vs_static",
            "vs_oracle",
            "rescales",
            "downtime_s",
            "latency_p95_s",
            "recovery_violations",
            "lag_growth_s",
        ):
            assert key in metrics
    # static at max_scaleout: the default config's is the topic's partition count, the default job model's 24,
    # held to agent.max_executors (16)
    assert data["policies"]["static:16"]["vs_static"] == pytest.approx(1.0)
    assert data["policies"]["oracle"]["vs_oracle"] == pytest.approx(1.0)
    assert (out / "index.html").read_text().count("<img") == 1
    assert (out / "sine.png").stat().st_size > 1000
    header = (out / "sine.csv").read_text().splitlines()[0]
    assert header.startswith("second,workload_per_s,static:16.scaleout")
    assert "hpa:0.8" in capsys.readouterr().out  # the table


def test_several_traces_give_a_traces_list(tmp_path: Path, trace: Path) -> None:
    other = _write_trace(tmp_path / "flat.csv", np.full(600, 1000.0))
    rc = _run(
        [
            "--trace",
            str(trace),
            "--trace",
            str(other),
            "--policies",
            "static:2,oracle",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    assert rc == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert [t["trace"] for t in data["traces"]] == ["sine.csv", "flat.csv"]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param(lambda p: ["--policies", "static:2,warp"], "unknown policy 'warp'", id="unknown-policy"),
        pytest.param(lambda p: ["--trace", str(p / "missing.csv")], "missing.csv: cannot read", id="missing-trace"),
        pytest.param(
            lambda p: ["--trace", str(_bad(p / "bad.csv", "second|count\n0|5\n1|x\n"))],
            "bad.csv:3",
            id="bad-trace-line",
        ),
        pytest.param(
            lambda p: ["--job-model", str(_bad(p / "jm.yaml", "partitions: 0\nfoo: 1\n"))],
            "partitions",
            id="bad-job-model",
        ),
        pytest.param(
            lambda p: ["--job-model", str(_bad(p / "jm.yaml", "downtime_scale_out: {low_s: 9, high_s: 3}\n"))],
            "downtime_scale_out",
            id="downtime-order",
        ),
        pytest.param(
            lambda p: ["--config", str(_bad(p / "c.yaml", "controller: {loop_interval_s: -1}\n"))],
            "controller.loop_interval_s",
            id="bad-config",
        ),
        pytest.param(
            lambda p: ["--policies", "spark-da,static:2"], "spark-da read tasks and batches", id="spark-da-continuous"
        ),
        pytest.param(
            lambda p: ["--policies", "batch-ratio:scaling_up_ratio=0.2"],
            "scaling_up_ratio must exceed scaling_down_ratio",
            id="batch-ratio-ratios",
        ),
    ],
)
def test_clear_errors(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str], setup, message: str) -> None:
    argv = setup(tmp_path)
    if "--trace" not in argv:
        argv = ["--trace", str(trace), *argv]
    assert _run(argv) == 2
    assert message in capsys.readouterr().err


def test_job_model_profile_by_name(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        _run(["--trace", str(trace), "--job-model", "local", "--policies", "static:4,hpa:0.8,oracle", "--json", "-"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["policies"]["static:4"]["avg_executors"] == 4


def test_unknown_job_model_profile_is_a_clear_error(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["--trace", str(trace), "--job-model", "kubernets"]) == 2
    err = capsys.readouterr().err
    assert "kubernets: invalid job model: no such file, and no job-model profile of that name" in err
    assert "kubernetes" in err and "local" in err


def test_job_model_error_names_unknown_key(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(["--trace", str(trace), "--job-model", str(_bad(tmp_path / "jm.yaml", "downtime_scale_in: {mean_s: 3}\n"))])
    assert "downtime_scale_in.mean_s: unknown key" in capsys.readouterr().err


def _bad(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_wired_into_the_main_cli(tmp_path: Path, trace: Path) -> None:
    from daedalus_spark.cli import main

    rc = main(
        [
            "simulate",
            "--no-progress",
            "--trace",
            str(trace),
            "--policies",
            "static:3,oracle",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    assert rc == 0
    assert json.loads((tmp_path / "r.json").read_text())["policies"]["static:3"]["avg_executors"] == 3


def test_progress_bar_goes_to_stderr(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="daedalus-spark")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["simulate", "--trace", str(trace), "--policies", "hpa:0.8"])
    assert args.handler(args) == 0
    captured = capsys.readouterr()
    # not a terminal here: no bar redrawn, one line when the runs are done
    assert f"{trace.name}: 1/1 runs in " in captured.err and "runs in" not in captured.out
    assert "\r" not in captured.err


def test_json_to_stdout_stays_parseable(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["--trace", str(trace), "--policies", "static:2,oracle", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["policies"]["static:2"]["rescales"] == 0


def test_json_goes_into_a_directory_that_does_not_exist_yet(tmp_path) -> None:
    from daedalus_spark.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("second|count\n" + "".join(f"{s}|{20000 + 10 * (s % 60)}\n" for s in range(600)))
    target = tmp_path / "new" / "dir" / "sim.json"
    code = main(
        ["simulate", "--trace", str(trace), "--policies", "static:4,oracle", "--json", str(target), "--no-progress"]
    )
    assert code == 0 and "policies" in target.read_text()


def test_simulate_prints_the_optimum_beside_the_oracle(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from daedalus_spark.sim.cli import simulate

    rc = simulate(traces=[str(trace)], policies="static:12,oracle,optimum", speedup=2, json_path="-", progress=False)
    assert rc == 0
    captured = capsys.readouterr()
    assert "vs optimum" in captured.err and "optimum " in captured.err  # the table goes to stderr with JSON on stdout
    data = json.loads(captured.out)
    assert data["policies"]["optimum"]["vs_optimum"] == pytest.approx(1.0)
    assert data["policies"]["static:12"]["vs_optimum"] >= 1.0


def test_the_default_static_line_stays_within_the_configs_maximum(tmp_path: Path, trace: Path) -> None:
    """A config allowing fewer than 12 executors (the demo's allows 3) once failed on the default list's static:12."""
    from daedalus_spark.sim.cli import simulate

    config = tmp_path / "c.yaml"
    config.write_text("controller:\n  max_scaleout: 3\n", encoding="utf-8")
    rc = simulate(
        traces=[str(trace)], config_path=str(config), speedup=4, json_path=str(tmp_path / "r.json"), progress=False
    )
    assert rc == 0
    names = json.loads((tmp_path / "r.json").read_text())["policies"]
    assert "static:3" in names and "static:12" not in names
