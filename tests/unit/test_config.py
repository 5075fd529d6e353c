"""The YAML config: defaults, every error naming its YAML path, and the shipped example staying in sync."""

import subprocess
import sys

import pytest
import yaml

from daedalus_spark.config import Config, ConfigError, key_paths, load_config, parse_config, render_yaml
from daedalus_spark.config.model import planning_warnings
from tests.conftest import ROOT

EXAMPLE = ROOT / "deploy" / "daedalus.yaml"


def test_defaults_are_the_papers():
    c = Config()
    assert (c.controller.loop_interval_s, c.controller.target_recovery_s, c.controller.checkpoint_interval_s) == (
        60,
        600,
        10,
    )
    assert (c.recovery.initial_downtime_scale_out_s, c.recovery.initial_downtime_scale_in_s) == (30, 15)
    assert (c.forecast.horizon_s, c.forecast.poor_forecasts_before_refit) == (900, 15)
    assert (c.controller.recent_rescale_window_s, c.controller.cooldown_s) == (600, 180)


@pytest.mark.parametrize(
    "data,expected",
    [
        pytest.param(
            {"controller": {"loop_interval_s": "soon"}},
            "controller.loop_interval_s: Input should be a valid number",
            id="wrong-type",
        ),
        pytest.param(
            {"controller": {"target_recovery_s": -1}},
            "controller.target_recovery_s: Input should be greater than 0",
            id="out-of-range",
        ),
        pytest.param(
            {"forecast": {"horizon_s": 10}},
            "forecast.horizon_s: Input should be greater than or equal to 60",
            id="below-minimum",
        ),
        pytest.param(
            {"controller": {"utilization_signal": "gpu"}},
            "controller.utilization_signal: Input should be 'cpu' or 'busy_time'",
            id="not-an-allowed-value",
        ),
        pytest.param(
            {"controller": {"max_scaleot": 3}},
            "controller.max_scaleot: unknown key (allowed here:",
            id="unknown-key-typo",
        ),
        pytest.param(
            {"planner": {}},
            "planner: unknown key (allowed here: actuator, agent, capacity, controller, demo, forecast, knowledge, "
            "kubernetes, monitor, recovery, runtime)",
            id="unknown-section",
        ),
        pytest.param(
            {"controller": {"min_scaleout": 5, "max_scaleout": 3}},
            "controller.min_scaleout (5) must not exceed controller.max_scaleout (3)",
            id="inconsistent",
        ),
        pytest.param([1, 2], "expected a mapping", id="not-a-mapping"),
        pytest.param(
            {"monitor": {"prometheus_url": "http://prom:9090"}},
            "monitor: monitor.rate_window_s (5 s) must be at least 4 × monitor.scrape_interval_s (30 s) = 120 s",
            id="default-window-against-a-default-scrape",
        ),
        pytest.param(
            {"monitor": {"prometheus_url": "http://prom:9090", "rate_window_s": 119}},
            "monitor.rate_window_s (119 s) must be at least 4 × monitor.scrape_interval_s (30 s)",
            id="rate-window-just-below",
        ),
        pytest.param(
            {"monitor": {"job_labels": {"app-id": "x"}}},
            "monitor.job_labels: 'app-id' is not a Prometheus label name",
            id="job-label-not-a-label-name",
        ),
        pytest.param(
            {"monitor": {"job_labels": {"namespace": "a"}, "job_labels_env": {"namespace": "NS"}}},
            "monitor.job_labels and monitor.job_labels_env both set namespace",
            id="job-label-twice",
        ),
        pytest.param(
            {"knowledge": {"retention_days": 0.01}},
            "knowledge.retention_days (0.01 days) is shorter than forecast.history_window_s (3600 s), history the "
            "planner reads: keep at least 0.0417 days",
            id="retention-days-below-forecast-window",
        ),
        pytest.param(
            {"knowledge": {"retention_days": 0.5}, "forecast": {"history_window_s": 86400}},
            "knowledge.retention_days (0.5 days) is shorter than forecast.history_window_s (86400 s)",
            id="retention-days-below-longer-window",
        ),
        pytest.param(
            {"knowledge": {"retention_days": 0.05}, "controller": {"cost_aware": {"scale_in_lookback_s": 7200}}},
            "knowledge.retention_days (0.05 days) is shorter than controller.cost_aware.scale_in_lookback_s (7200 s)",
            id="retention-days-below-lookback",
        ),
        pytest.param(
            {"knowledge": {"retention_rows": 999}},
            "knowledge.retention_rows (999) is fewer than the 1000 rows the controller and `report` read back",
            id="retention-rows-below-what-is-read-back",
        ),
        pytest.param(
            {
                "knowledge": {"retention_rows": 5000},
                "controller": {"loop_interval_s": 5},
                "forecast": {"history_window_s": 86400},
            },
            "knowledge.retention_rows (5000) is fewer than the 17280 rows",
            id="retention-rows-below-one-per-tick-over-window",
        ),
        pytest.param(
            {"knowledge": {"decision_log_max_bytes": -1}},
            "knowledge.decision_log_max_bytes: Input should be greater than or equal to 0",
            id="log-size-negative",
        ),
        pytest.param(
            {"knowledge": {"decision_log_backups": 0}},
            "knowledge.decision_log_backups: Input should be greater than or equal to 1",
            id="log-backups-zero",
        ),
    ],
)
def test_config_errors_name_the_yaml_path(data, expected):
    with pytest.raises(ConfigError) as err:
        parse_config(data, "my.yaml")
    assert expected in str(err.value)
    assert str(err.value).startswith("my.yaml: invalid config")


@pytest.mark.parametrize(
    ("monitor", "window_s"),
    [
        pytest.param({}, 5, id="defaults-embedded-scraper"),
        pytest.param({"prometheus_url": "http://p:9090", "rate_window_s": 120}, 120, id="exactly-four-scrapes"),
        pytest.param({"prometheus_url": "http://p:9090", "scrape_interval_s": 5, "rate_window_s": 30}, 30, id="5s"),
    ],
)
def test_rate_windows_of_four_scrapes_or_more_are_accepted(monitor, window_s):
    assert parse_config({"monitor": monitor}).monitor.rate_window_s == window_s


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"knowledge": {"retention_days": 0, "retention_rows": 0}}, id="unbounded"),
        pytest.param({"knowledge": {"retention_days": 3600 / 86400, "retention_rows": 1000}}, id="exactly-the-windows"),
        pytest.param(
            {"knowledge": {"retention_rows": 5000}, "controller": {"loop_interval_s": 5}}, id="rows-cover-hour-at-5s"
        ),
        pytest.param(
            {
                "knowledge": {"retention_days": 0.01},
                "forecast": {"history_window_s": 300},
                "controller": {
                    "max_rescales_per_hour": 0,
                    "cost_aware": {"scale_in_lookback_s": 300},
                    "recent_rescale_window_s": 300,
                },
            },
            id="short-days-when-every-window-is-shorter",
        ),
    ],
)
def test_retention_that_covers_the_windows_is_accepted(data):
    assert parse_config(data).knowledge.model_dump().items() >= data["knowledge"].items()


def test_every_error_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        parse_config({"controller": {"loop_interval_s": 0, "cooldown_s": "x"}, "forecast": {"nope": 1}})
    assert len(err.value.errors) == 3


def test_example_config_documents_every_field_and_equals_the_defaults():
    text = EXAMPLE.read_text()
    assert text == render_yaml(Config()), "regenerate deploy/daedalus.yaml with `daedalus-spark validate-config`"
    assert load_config(EXAMPLE) == Config()
    for path in key_paths(Config):
        assert f"  {path.rpartition('.')[2]}:" in text


def test_rendered_yaml_round_trips_a_changed_config():
    changed = parse_config(
        {
            "controller": {
                "max_scaleout": 40,
                "utilization_signal": "busy_time",
                "horizon": {"upper_weight_ratio": 0.25},
            },
            "agent": {"max_executors": 40},
        }
    )
    assert parse_config(yaml.safe_load(render_yaml(changed))) == changed


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "daedalus_spark.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_validate_config_command(tmp_path):
    ok = run_cli("validate-config", str(EXAMPLE))
    assert ok.returncode == 0 and "loop_interval_s: 60.0" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("controller:\n  loop_interval_s: 1\n  bogus: 2\n")
    result = run_cli("validate-config", str(bad))
    assert result.returncode == 2
    assert "controller.loop_interval_s" in result.stderr and "controller.bogus: unknown key" in result.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("controller: [1,\n")
    assert "not valid YAML" in run_cli("validate-config", str(broken)).stderr
    assert "cannot read" in run_cli("validate-config", str(tmp_path / "missing.yaml")).stderr


def _demo_times(horizon_s: float) -> dict:
    """The demo's loop, scale-out downtime and recovery target (10 + 35 + 60 = 105 s) with forecast `horizon_s`."""
    return {
        "forecast": {"horizon_s": horizon_s},
        "controller": {"loop_interval_s": 10, "target_recovery_s": 60},
        "recovery": {"initial_downtime_scale_out_s": 35},
    }


@pytest.mark.parametrize(
    ("data", "warned"),
    [
        pytest.param({}, False, id="defaults-900-s-cover-60-30-600"),
        pytest.param({"forecast": {"horizon_s": 600}}, True, id="horizon-short-of-tick-downtime-target"),
        pytest.param(_demo_times(105), False, id="horizon-exactly-covers-them"),
        pytest.param(_demo_times(104), True, id="horizon-one-second-short"),
        pytest.param(
            {"forecast": {"horizon_s": 60}, "controller": {"planner": "paper"}}, False, id="paper-planner-has-no-plan"
        ),
    ],
)
def test_a_horizon_too_short_for_a_scale_outs_recovery_is_warned_about(data, warned, tmp_path, caplog):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    with caplog.at_level("WARNING"):
        load_config(path)
    hits = [r.getMessage() for r in caplog.records if "forecast.horizon_s" in r.getMessage()]
    assert bool(hits) == warned
    assert all(str(path) in hit and "recovery" in hit for hit in hits)


def test_the_demo_config_horizon_covers_its_scale_outs_recovery():
    assert planning_warnings(load_config(ROOT / "deploy" / "demo.yaml")) == ()
