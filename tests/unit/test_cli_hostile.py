"""Hostile and careless inputs to every command: one error line naming the file, line or option, exit 2;
`--json` is strict JSON; nothing hangs, nothing runs with a meaning other than the one asked for."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from daedalus_spark.cli import main
from tests.conftest import MEASUREMENTS

CPU, TPUT = str(MEASUREMENTS / "sine_cpu_p2.csv"), str(MEASUREMENTS / "sine_throughput_p2.csv")


def _trace(seconds: int) -> str:
    return "".join(f"{s}|{1000 + 10 * (s % 50)}\n" for s in range(seconds))


GOOD_TRACE = _trace(4000)


def _csv(rows: list[str], header: str = "Time,w1,w2") -> str:
    return header + "\n" + "\n".join(rows) + "\n"


def _metric_rows(n: int, value=lambda i: f"{0.3 + 0.005 * i:.3f}") -> list[str]:
    return [f"{i},{value(i)},{value(i)}" for i in range(n)]


def _same(n: int, value: str) -> str:
    return _csv([f"{i},{value},{value}" for i in range(n)])


CAP = ["capacity", "--utilization", "{d}/u.csv", "--throughput", "{d}/t.csv"]
VC = ["validate-config", "{d}/c.yaml"]
TPUT_ROWS = _csv([f"{i},{900 + 10 * i},{900 + 10 * i}" for i in range(40)])

# id, files {name: text or bytes}, argv ({d} = the directory holding the files), expected text in the error line
CASES = [
    # --- validate-config
    (
        "config-non-utf8",
        {"c.yaml": b"controller:\n  max_scaleout: 4\n  \xff\xfe: 1\n"},
        VC,
        "c.yaml:3: invalid config: not UTF-8",
    ),
    ("config-binary", {"c.yaml": b"\x00\x01\x02\x89PNG"}, VC, "not UTF-8"),
    ("config-nul-bytes", {"c.yaml": b"a: \x00\x01"}, VC, "not valid YAML"),
    (
        "config-duplicate-section",
        {"c.yaml": "controller:\n  max_scaleout: 4\ncontroller:\n  min_scaleout: 2\n"},
        VC,
        "duplicate key 'controller' (first at line 1)",
    ),
    (
        "config-duplicate-key",
        {"c.yaml": "forecast:\n  horizon_s: 900\n  horizon_s: 600\n"},
        VC,
        "duplicate key 'horizon_s'",
    ),
    ("config-bool-for-int", {"c.yaml": "controller:\n  max_scaleout: true\n"}, VC, "controller.max_scaleout"),
    ("config-string-for-int", {"c.yaml": "controller:\n  max_scaleout: '12'\n"}, VC, "controller.max_scaleout"),
    ("config-float-for-int", {"c.yaml": "controller:\n  max_scaleout: 12.5\n"}, VC, "controller.max_scaleout"),
    ("config-string-for-bool", {"c.yaml": "forecast:\n  background_refit: 'no'\n"}, VC, "forecast.background_refit"),
    ("config-nan", {"c.yaml": "forecast:\n  horizon_s: .nan\n"}, VC, "forecast.horizon_s"),
    ("config-inf", {"c.yaml": "controller:\n  target_recovery_s: .inf\n"}, VC, "controller.target_recovery_s"),
    ("config-fractional-resolution", {"c.yaml": "forecast:\n  resolution_s: 2.5\n"}, VC, "whole number of seconds"),
    ("config-alias-bomb", {"c.yaml": "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"}, VC, "aliases"),
    ("config-deep-nesting", {"c.yaml": "[" * 5000 + "]" * 5000}, VC, "c.yaml"),
    ("config-top-level-list", {"c.yaml": "- 1\n- 2\n"}, VC, "expected a mapping"),
    ("config-missing", {}, ["validate-config", "{d}/nope.yaml"], "nope.yaml"),
    ("config-directory", {}, ["validate-config", "{d}"], "cannot read"),
    ("config-unknown-key", {"c.yaml": "controller:\n  max_scaleouts: 4\n"}, VC, "unknown key"),
    ("config-endless-device", {}, ["validate-config", "/dev/zero"], "/dev/zero: invalid config: larger than"),
    (
        "config-url-scheme",
        {"c.yaml": "monitor:\n  prometheus_url: prom:9090\n"},
        VC,
        "monitor.prometheus_url: expected an http",
    ),
    ("config-scrape-url", {"c.yaml": "monitor:\n  scrape_urls: [localhost:9095]\n"}, VC, "monitor.scrape_urls"),
    (
        "config-scrape-url-not-list",
        {"c.yaml": "monitor:\n  scrape_urls: http://a:1/metrics\n"},
        VC,
        "monitor.scrape_urls",
    ),
    ("config-nothing-to-observe", {"c.yaml": "monitor:\n  scrape_urls: []\n"}, VC, "nothing to observe"),
    ("config-agent-port", {"c.yaml": "actuator:\n  agent_url: http://127.0.0.1:99999\n"}, VC, "actuator.agent_url"),
    (
        "config-empty-knowledge-path",
        {"c.yaml": "controller:\n  knowledge_path: ''\n"},
        VC,
        "controller.knowledge_path: must not be empty",
    ),
    ("config-retries-float", {"c.yaml": "actuator:\n  retries: 2.5\n"}, VC, "actuator.retries"),
    ("config-port-string", {"c.yaml": "agent:\n  port: '9095'\n"}, VC, "agent.port"),
    ("config-log-level", {"c.yaml": "runtime:\n  log_level: debug\n"}, VC, "runtime.log_level"),
    ("config-log-format", {"c.yaml": "runtime:\n  log_format: logfmt\n"}, VC, "runtime.log_format"),
    ("config-actuator-kind", {"c.yaml": "actuator:\n  kind: kubectl\n"}, VC, "actuator.kind"),
    ("config-min-above-max", {"c.yaml": "controller:\n  min_scaleout: 5\n  max_scaleout: 4\n"}, VC, "min_scaleout"),
    # --- capacity: options
    (
        "capacity-max-scaleout-0",
        {},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--max-scaleout", "0"],
        "argument --max-scaleout: 0 is outside 1..10000",
    ),
    (
        "capacity-max-scaleout-huge",
        {},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--max-scaleout", "100000000"],
        "--max-scaleout",
    ),
    (
        "capacity-max-scaleout-float",
        {},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--max-scaleout", "2.5"],
        "not a whole number",
    ),
    (
        "capacity-smooth-0",
        {},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--smooth-throughput", "0"],
        "--smooth-throughput",
    ),
    (
        "capacity-smooth-negative",
        {},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--smooth-throughput", "-3"],
        "--smooth-throughput",
    ),
    (
        "capacity-smooth-whole-file",
        {},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--smooth-throughput", "999999"],
        "would average them all",
    ),
    ("capacity-missing-option", {}, ["capacity", "--utilization", CPU], "--throughput"),
    (
        "capacity-bad-config",
        {"c.yaml": "capacity:\n  min_points: 1\n"},
        ["capacity", "--utilization", CPU, "--throughput", TPUT, "--config", "{d}/c.yaml"],
        "capacity.min_points",
    ),
    # --- capacity: files
    (
        "capacity-endless-device",
        {},
        ["capacity", "--utilization", "/dev/zero", "--throughput", TPUT],
        "/dev/zero: larger than",
    ),
    (
        "capacity-1e308",
        {"u.csv": _csv(_metric_rows(40)), "t.csv": _csv([f"{i},1e308,5" for i in range(40)])},
        CAP,
        "t.csv:2: column 'w1'",
    ),
    (
        "capacity-inf-cell",
        {"u.csv": _csv(_metric_rows(40)), "t.csv": _csv([f"{i},inf,5" for i in range(40)])},
        CAP,
        "t.csv:2",
    ),
    (
        "capacity-stray-quote",
        {"u.csv": _csv([*_metric_rows(3), '3,"0.4,0.5']), "t.csv": TPUT_ROWS},
        CAP,
        "u.csv:5: not a valid CSV row",
    ),
    (
        "capacity-huge-cell",
        {"u.csv": _csv([*_metric_rows(3), '3,"' + "9" * 200000 + '",0.5']), "t.csv": TPUT_ROWS},
        CAP,
        "u.csv:5: not a valid CSV row",
    ),
    (
        "capacity-unsorted",
        {"u.csv": _csv(["0,0.3,0.3", "2,0.5,0.5", "1,0.4,0.4"]), "t.csv": TPUT_ROWS},
        CAP,
        "u.csv:4: time '1' goes back",
    ),
    (
        "capacity-repeated-time",
        {"u.csv": _csv(["2023-01-01 00:00:00,0.3,0.3", "2023-01-01 00:00:00,0.4,0.4"]), "t.csv": TPUT_ROWS},
        CAP,
        "repeats",
    ),
    (
        "capacity-percent",
        {"u.csv": _csv(_metric_rows(40, lambda i: f"{30 + i}")), "t.csv": TPUT_ROWS},
        CAP,
        "utilization looks like percent",
    ),
    (
        "capacity-bad-throughput-named",
        {"u.csv": _csv(_metric_rows(40)), "t.csv": _same(40, "-1")},
        CAP,
        "t.csv: no usable samples",
    ),
    (
        "capacity-zero-throughput-named",
        {"u.csv": _csv(_metric_rows(40)), "t.csv": _same(40, "0")},
        CAP,
        "t.csv: no usable samples: every throughput is 0",
    ),
    (
        "capacity-zero-utilization",
        {"u.csv": _csv([f"{i},0,0" for i in range(40)]), "t.csv": TPUT_ROWS},
        CAP,
        "every utilization is 0",
    ),
    (
        "capacity-other-times",
        {"u.csv": _csv(_metric_rows(40)), "t.csv": _csv([f"{i + 1},5,5" for i in range(40)])},
        CAP,
        "time column differs",
    ),
    ("capacity-header-only", {"u.csv": "Time,w1\n", "t.csv": TPUT_ROWS}, CAP, "u.csv: no data rows"),
    ("capacity-binary", {"u.csv": b"\x89PNG\r\n\x1a\n\x00\x00", "t.csv": TPUT_ROWS}, CAP, "u.csv: not UTF-8"),
    (
        "capacity-ragged-row",
        {"u.csv": _csv(["0,0.3,0.3", "1,0.4"]), "t.csv": TPUT_ROWS},
        CAP,
        "u.csv:3: expected 3 fields",
    ),
    (
        "capacity-duplicate-columns",
        {"u.csv": _csv(["0,0.3,0.3"], header="Time,w1,w1"), "t.csv": TPUT_ROWS},
        CAP,
        "duplicate column",
    ),
    # --- forecast evaluate
    *[
        (
            f"horizon-{h}",
            {"t.csv": GOOD_TRACE},
            ["forecast", "evaluate", "--trace", "{d}/t.csv", "--horizon", h],
            "argument --horizon",
        )
        for h in ("nan", "inf", "-inf", "0", "-5", "1e18", "abc", "")
    ],
    (
        "horizon-below-step",
        {"t.csv": GOOD_TRACE},
        ["forecast", "evaluate", "--trace", "{d}/t.csv", "--horizon", "3"],
        "--horizon 3 is shorter than one forecast step",
    ),
    ("trace-one-line", {"t.csv": "0|1000\n"}, ["forecast", "evaluate", "--trace", "{d}/t.csv"], "too short"),
    (
        "trace-too-short-for-horizon",
        {"t.csv": _trace(900)},
        ["forecast", "evaluate", "--trace", "{d}/t.csv"],
        "too short",
    ),
    ("trace-1e308", {"t.csv": "0|1e308\n1|5\n"}, ["forecast", "evaluate", "--trace", "{d}/t.csv"], "t.csv:1"),
    ("trace-endless-device", {}, ["forecast", "evaluate", "--trace", "/dev/urandom"], "/dev/urandom: larger than"),
    ("trace-empty", {"t.csv": ""}, ["forecast", "evaluate", "--trace", "{d}/t.csv"], "no data rows"),
    ("trace-missing", {}, ["forecast", "evaluate", "--trace", "{d}/missing.csv"], "missing.csv: cannot read"),
    (
        "forecast-fractional-resolution",
        {"t.csv": GOOD_TRACE, "c.yaml": "forecast:\n  resolution_s: 2.5\n"},
        ["forecast", "evaluate", "--trace", "{d}/t.csv", "--config", "{d}/c.yaml"],
        "whole number of seconds",
    ),
    # --- simulate
    ("speedup-inf", {}, ["simulate", "--speedup", "inf"], "argument --speedup"),
    ("speedup-nan", {}, ["simulate", "--speedup", "nan"], "argument --speedup"),
    ("speedup-fraction", {}, ["simulate", "--speedup", "1.4"], "not a whole number"),
    ("speedup-below-1", {}, ["simulate", "--speedup", "0.5"], "argument --speedup"),
    ("seed-negative", {}, ["simulate", "--seed", "-1"], "argument --seed"),
    ("seed-huge", {}, ["simulate", "--seed", str(2**64)], "argument --seed"),
    ("static-above-max", {}, ["simulate", "--policies", "static:100"], "'static:100': 100 is outside [1, 16]"),
    ("static-zero", {}, ["simulate", "--policies", "static:0"], "static:0"),
    ("static-fraction", {}, ["simulate", "--policies", "static:2.5"], "not a whole number"),
    ("hpa-nan", {}, ["simulate", "--policies", "hpa:nan"], "hpa:nan"),
    ("hpa-above-1", {}, ["simulate", "--policies", "hpa:80"], "hpa:80"),
    ("flink-window-0", {}, ["simulate", "--policies", "flink:metrics_window_s=0"], "metrics_window_s"),
    ("flink-interval-0", {}, ["simulate", "--policies", "flink:reconcile_interval_s=0"], "reconcile_interval_s"),
    (
        "flink-bool-maybe",
        {},
        ["simulate", "--policies", "flink:align_to_partitions=maybe"],
        "align_to_partitions='maybe' is not true or false",
    ),
    ("flink-unknown", {}, ["simulate", "--policies", "flink:speed=3"], "unknown setting"),
    ("flink-twice", {}, ["simulate", "--policies", "flink:restart_time_s=5:restart_time_s=6"], "given twice"),
    ("flink-inf", {}, ["simulate", "--policies", "flink:catch_up_duration_s=inf"], "catch_up_duration_s"),
    ("policy-unknown", {}, ["simulate", "--policies", "magic"], "unknown policy"),
    ("policy-twice", {}, ["simulate", "--policies", "oracle,oracle"], "listed twice"),
    ("policy-empty", {}, ["simulate", "--policies", ",,"], "no policies"),
    (
        "job-capacity-inf",
        {"j.yaml": "executor_capacity_per_s: .inf\n"},
        ["simulate", "--job-model", "{d}/j.yaml"],
        "executor_capacity_per_s",
    ),
    (
        "job-slow-executor-outside",
        {"j.yaml": "slow_executors: [3, 99]\n"},
        ["simulate", "--job-model", "{d}/j.yaml"],
        "slow_executors [99] outside",
    ),
    (
        "job-slow-executor-negative",
        {"j.yaml": "slow_executors: [-1]\n"},
        ["simulate", "--job-model", "{d}/j.yaml"],
        "slow_executors",
    ),
    (
        "job-slow-executor-string",
        {"j.yaml": "slow_executors: ['1']\n"},
        ["simulate", "--job-model", "{d}/j.yaml"],
        "slow_executors",
    ),
    (
        "job-initial-above-max",
        {"j.yaml": "initial_scaleout: 50\n"},
        ["simulate", "--job-model", "{d}/j.yaml"],
        "initial_scaleout 50 exceeds",
    ),
    (
        "job-duplicate-key",
        {"j.yaml": "partitions: 4\npartitions: 8\n"},
        ["simulate", "--job-model", "{d}/j.yaml"],
        "duplicate key",
    ),
    ("simulate-one-line-trace", {"t.csv": "0|5\n"}, ["simulate", "--trace", "{d}/t.csv"], "t.csv: 1 s of workload"),
    (
        "simulate-speedup-eats-trace",
        {"t.csv": GOOD_TRACE},
        ["simulate", "--trace", "{d}/t.csv", "--speedup", "100"],
        "after --speedup 100",
    ),
    ("simulate-trace-unordered", {"t.csv": "0|5\n2|5\n"}, ["simulate", "--trace", "{d}/t.csv"], "t.csv:2"),
    ("unknown-command", {}, ["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize(("files", "argv", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_error_line_and_exit_2(tmp_path: Path, capsys, files, argv, expected) -> None:
    for name, content in files.items():
        target = tmp_path / name
        target.write_bytes(content) if isinstance(content, bytes) else target.write_text(content)
    with_dir = [a.replace("{d}", str(tmp_path)) for a in argv]
    try:
        code = main(with_dir)
    except SystemExit as exc:  # argparse
        code = exc.code
    _out, err = capsys.readouterr()
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and expected in err, err


def _strict(text: str) -> object:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")

    return json.loads(text, parse_constant=refuse)


def test_capacity_json_is_strict(capsys) -> None:
    assert main(["capacity", "--utilization", CPU, "--throughput", TPUT, "--json", "--max-scaleout", "4"]) == 0
    report = _strict(capsys.readouterr().out)
    assert len(report["per_scaleout"]) == 4


def test_forecast_json_is_strict_when_a_measure_is_undefined(tmp_path: Path, capsys) -> None:
    """A trace too short for any refit: `fit_seconds` or p95 can be NaN internally; JSON says null."""
    (tmp_path / "t.csv").write_text(_trace(1500))
    config = tmp_path / "c.yaml"
    config.write_text("forecast:\n  horizon_s: 60\n  min_history_s: 1200\n")
    assert main(["forecast", "evaluate", "--trace", str(tmp_path / "t.csv"), "--config", str(config), "--json"]) == 0
    result = _strict(capsys.readouterr().out)
    assert all(
        v is None or (isinstance(v, (int, float)) and math.isfinite(v)) for k, v in result.items() if k != "trace"
    )
