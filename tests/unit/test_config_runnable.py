"""Configs that validate must run: validate-config refuses, naming the key, whatever `run` would fail on at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from daedalus_spark.cli import main
from daedalus_spark.config import ConfigError, load_config, parse_config, render_yaml

PROMETHEUS = {"prometheus_url": "http://prometheus:9090", "scrape_interval_s": 1}

REFUSED = [
    # (id, config, what the one error line must name)
    ("nul-in-knowledge-path", {"controller": {"knowledge_path": "k\x00.sqlite"}}, "controller.knowledge_path"),
    ("nul-in-decision-log", {"runtime": {"decision_log": "d\x00.jsonl"}}, "runtime.decision_log"),
    ("newline-in-ca-file", {"monitor": {**PROMETHEUS, "ca_file": "ca.pem\n"}}, "monitor.ca_file"),
    ("nul-in-kubeconfig", {"kubernetes": {"kubeconfig": "\x00"}}, "kubernetes.kubeconfig"),
    ("step-longer-than-loop", {"monitor": {"step_s": 30}, "controller": {"loop_interval_s": 10}}, "monitor.step_s"),
    ("promql-unclosed", {"monitor": {**PROMETHEUS, "query_lag": "sum(rate(x[5m]"}}, "monitor.query_lag"),
    ("promql-garbage", {"monitor": {**PROMETHEUS, "query_uptime": "max by (a b) (x)"}}, "monitor.query_uptime"),
    ("promql-unknown-placeholder", {"monitor": {**PROMETHEUS, "query_lag": "sum(lag{$selectr})"}}, "$selectr"),
    ("query-in-scrape-mode", {"monitor": {"query_lag": "sum(my_lag)"}}, "monitor.query_lag: ignored"),
    ("job-labels-in-scrape-mode", {"monitor": {"job_labels": {"namespace": "a"}}}, "monitor.job_labels: ignored"),
    ("max-scaleout-above-agent", {"controller": {"max_scaleout": 40}}, "agent.max_executors"),
    ("min-scaleout-below-agent", {"agent": {"min_executors": 2}}, "agent.min_executors"),
    ("empty-metrics-host", {"runtime": {"metrics_host": ""}}, "runtime.metrics_host: must not be empty"),
    ("url-user-info", {"monitor": {**PROMETHEUS, "prometheus_url": "http://u:pw@p:9090"}}, "user info"),
    ("url-query", {"monitor": {"scrape_urls": ["http://a:9095/metrics?x=1"]}}, "query string"),
    ("url-fragment", {"actuator": {"agent_url": "http://a:9095#top"}}, "fragment"),
    ("k8s-name-upper-case", {"kubernetes": {"name": "Spark_Worker"}}, "kubernetes.name"),
    ("k8s-namespace-space", {"kubernetes": {"namespace": "team a"}}, "kubernetes.namespace"),
    ("k8s-selector-bad-value", {"kubernetes": {"executor_selector": "spark-role=exec/utor"}}, "executor_selector"),
    ("k8s-selector-bad-key", {"kubernetes": {"executor_selector": "-role=x"}}, "executor_selector"),
    ("k8s-selector-empty-part", {"kubernetes": {"executor_selector": "a=b,,c"}}, "executor_selector"),
]


@pytest.mark.parametrize(("config", "named"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_validate_config_refuses_what_run_cannot_use(tmp_path: Path, capsys, config, named) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["validate-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and named in err
    assert "pw@" not in err  # a password in a refused URL is not echoed either


ACCEPTED = [
    ("default-selector", {"kubernetes": {"executor_selector": "spark-role=executor"}}),
    ("set-selector", {"kubernetes": {"executor_selector": "app in (a, b),!canary,tier!=web,x.io/role==exec"}}),
    ("empty-label-value", {"kubernetes": {"executor_selector": "spark-role="}}),
    ("k8s-names", {"kubernetes": {"namespace": "team-a", "name": "spark-worker.v2"}}),
    ("prometheus-queries", {"monitor": {**PROMETHEUS, "query_lag": "sum(my_lag{$selector}) or vector(0)"}}),
    ("scrape-mode-defaults-spelled-out", {"monitor": {"executor_label": "executor_id", "tls_verify": True}}),
    ("max-scaleout-with-a-larger-agent", {"controller": {"max_scaleout": 40}, "agent": {"max_executors": 40}}),
    (
        "kubernetes-actuator-ignores-agent-bounds",
        {"controller": {"max_scaleout": 40}, "actuator": {"kind": "kubernetes"}},
    ),
    ("every-interface-said-so", {"runtime": {"metrics_host": "0.0.0.0"}}),
    ("url-with-path", {"actuator": {"agent_url": "http://agent:9095/base/"}}),
]


@pytest.mark.parametrize("config", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_valid_configs_still_pass(config) -> None:
    parse_config(config)


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("controller:\n  loop_interval_s: 6e2\n", "loop_interval_s", 600.0),
        ("controller:\n  target_recovery_s: 1.2E+3\n", "target_recovery_s", 1200.0),
        ("controller:\n  cooldown_s: 1e-1\n", "cooldown_s", 0.1),
    ],
    ids=["6e2", "signed-exponent", "negative-exponent"],
)
def test_exponent_numbers_are_numbers_as_in_yaml_1_2(tmp_path: Path, text, key, value) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert getattr(load_config(path).controller, key) == value


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("controller:\n  target_recovery_s: 1e308\n", "less than or equal to 86400"),
        ("controller:\n  max_scaleout: 1e1\n", "valid integer"),
    ],
    ids=["1e308-out-of-range", "exponent-is-not-a-count"],
)
def test_exponent_numbers_meet_the_same_bounds(tmp_path: Path, text, named) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=named):
        load_config(path)


def test_the_printed_config_and_the_shipped_ones_validate() -> None:
    """validate-config prints every key; the scrape-mode check must not refuse its own output."""
    assert parse_config(yaml.safe_load(render_yaml(parse_config({})))) == parse_config({})
    for shipped in (Path("deploy/daedalus.yaml"), Path("deploy/demo.yaml")):
        load_config(shipped)
