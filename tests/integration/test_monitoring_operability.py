"""Operability: the alerting rules (promtool-checked and unit-tested) and the Grafana dashboard (every query parses
with promtool, every metric it names is one the controller, the agent, the CPU exporter or a recording rule exports)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.registry import Collector

from tests.conftest import ROOT

MONITORING = ROOT / "deploy" / "kubernetes" / "monitoring"
DASHBOARD = MONITORING / "daedalus-spark-dashboard.json"
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")

# Grafana's variables, replaced by values of their kind before promtool reads a query.
GRAFANA_VARIABLES = {"$__rate_interval": "2m", "$__interval": "1m", "$__range": "1h"}
_VARIABLE = re.compile(r"\$\{?\w+\}?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAME = re.compile(r"(?<![\w:.])([a-zA-Z_:][\w:]*)(\s*\()?")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "inf", "nan", "atan2"}


def promql(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return _VARIABLE.sub("x", expr)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions, keywords, label names
    (matchers, by/on lists) or strings."""
    bare = _STRING.sub('""', expr)
    for pattern in (_MATCHERS, _RANGE, _LABEL_LISTS):
        bare = pattern.sub(" ", bare)
    return {m.group(1) for m in _NAME.finditer(bare) if not m.group(2) and m.group(1).lower() not in _KEYWORDS}


@pytest.mark.parametrize(
    "expr,names",
    [
        pytest.param(
            'sum by (executor_id) (rate(a_total{x="y"}[5m])) / on (executor_id) b', {"a_total", "b"}, id="by-on"
        ),
        pytest.param("max by (le, phase) (h_bucket) > 0 and c offset 5m", {"h_bucket", "c"}, id="keywords"),
        pytest.param(
            'daedalus:rule{job=~"a|b"} or label_replace(d, "x", "$1", "y", "(.+)")',
            {"daedalus:rule", "d"},
            id="rule-name",
        ),
        pytest.param('time() - g{p=~"$pod"} * 1e3', {"g"}, id="functions-and-numbers"),
    ],
)
def test_metric_names_finds_the_selected_series_only(expr, names):
    assert metric_names(expr) == names


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panel_queries(board: dict) -> Iterator[tuple[str, str]]:
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            yield f"{panel['title']} / {target['refId']}", target["expr"]


def variable_queries(board: dict) -> Iterator[tuple[str, str]]:
    """The series selector inside each `label_values(selector, label)` variable query."""
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", variable["query"]["query"])
            assert inner, f"variable {variable['name']}: expected label_values(selector, label)"
            yield f"variable {variable['name']}", inner.group(1)


def families(collector: Collector) -> Iterable[tuple[str, str]]:
    return ((m.name, m.type) for m in collector.collect())


def exposed(name: str, kind: str) -> set[str]:
    """The series names a metric family shows in the exposition and in PromQL."""
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"], "summary": ["", "_count", "_sum"]}
    return {name + suffix for suffix in suffixes.get(kind, [""])}


def exported_names() -> set[str]:
    """Every series name the controller, the agent and the CPU exporter export, and every recorded one."""
    from daedalus_spark.agent.collector import AgentCollector
    from daedalus_spark.config import Config
    from daedalus_spark.controller import Controller
    from daedalus_spark.runtime.publishers import ControllerMetrics
    from daedalus_spark.sparkcluster.cpu_exporter import ExecutorCpuCollector

    agent = AgentCollector(app_id="app-1", started_at=0.0, latest={}, target=lambda: None)
    collectors: list[Collector] = [ControllerMetrics(Controller(Config())).registry, agent, ExecutorCpuCollector(list)]
    names = {series for c in collectors for name, kind in families(c) for series in exposed(name, kind)}
    rules = yaml.safe_load((MONITORING / "daedalus-rules.yaml").read_text())
    return names | {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}


def test_every_metric_the_dashboard_names_is_exported():
    board, exported = dashboard(), exported_names()
    queries = [*panel_queries(board), *variable_queries(board)]
    assert len(queries) > 20
    unknown = {where: sorted(metric_names(expr) - exported) for where, expr in queries if metric_names(expr) - exported}
    assert not unknown, unknown
    named = set().union(*(metric_names(expr) for _, expr in queries))
    # the controller's and the agent's signals are all on it
    assert {"daedalus_controller_scaleout_target", "daedalus_spark_executor_records_processed_total"} <= named
    assert {n for n in exported if n.startswith("daedalus_controller_") and not n.endswith(("_count", "_sum"))} <= named


def controller_names() -> set[str]:
    from daedalus_spark.config import Config
    from daedalus_spark.controller import Controller
    from daedalus_spark.runtime.publishers import ControllerMetrics

    registry = ControllerMetrics(Controller(Config())).registry
    return {series for name, kind in families(registry) for series in exposed(name, kind)}


def test_the_namespace_variable_comes_from_the_controller_present_in_both_metric_modes():
    """The agent's series exist with `monitor.metrics: agent` only; the controller's decisions counter, before its
    first tick and in either mode. The namespace variable (every other variable and panel is filtered by it) must not
    need the agent, nor a tick."""
    (namespace,) = [v for v in dashboard()["templating"]["list"] if v["name"] == "namespace"]
    assert re.fullmatch(r"label_values\(.*,\s*namespace\)", namespace["query"]["query"]), namespace["query"]
    (selector,) = [expr for where, expr in variable_queries(dashboard()) if where == "variable namespace"]
    assert metric_names(selector) and metric_names(selector) <= controller_names(), selector
    from prometheus_client.parser import text_string_to_metric_families

    from daedalus_spark.runtime.publishers import ControllerMetrics

    before_a_tick = generate_latest(ControllerMetrics().registry).decode()
    sampled = {s.name for f in text_string_to_metric_families(before_a_tick) for s in f.samples}
    assert metric_names(selector) <= sampled, "the namespace variable's series has no sample before a tick"
    assert namespace["definition"] == namespace["query"]["query"]


@needs_promtool
def test_every_dashboard_query_parses_with_promtool(tmp_path):
    board = dashboard()
    rules = [
        {"record": f"dashboard:query_{i}", "expr": promql(expr)} for i, (_, expr) in enumerate(panel_queries(board))
    ]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


@needs_promtool
def test_promtool_rejects_a_broken_dashboard_query(tmp_path):
    """The check above can fail: one unbalanced parenthesis is an error naming the query."""
    path = tmp_path / "broken.yaml"
    rule = {"record": "dashboard:broken", "expr": promql("sum by (x) (rate(a_total[$__rate_interval])")}
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [rule]}]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "dashboard:broken" in result.stdout + result.stderr


def test_dashboard_panels_are_laid_out_and_use_the_datasource_variable():
    board = dashboard()
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in board["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not area & cells, f"{p['title']} overlaps another panel"
        cells |= area
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}" and p["targets"], p["title"]
    assert board["timezone"] == "utc"


def test_prometheusrule_carries_the_plain_alert_file():
    plain = yaml.safe_load((MONITORING / "daedalus-alerts.yaml").read_text())
    wrapped = yaml.safe_load((MONITORING / "prometheusrule-alerts.yaml").read_text())
    assert wrapped["spec"]["groups"] == plain["groups"]
    alerts = {r["alert"] for g in plain["groups"] for r in g["rules"]}
    assert alerts == {
        "DaedalusTicksStalled",
        "DaedalusTicksSkipped",
        "DaedalusActuationRefusedOrFailed",
        "DaedalusLagPastRecoveryTarget",
    }


def test_every_metric_the_alerts_name_is_exported():
    exported = exported_names()
    rules = yaml.safe_load((MONITORING / "daedalus-alerts.yaml").read_text())
    for rule in (r for g in rules["groups"] for r in g["rules"]):
        assert metric_names(rule["expr"]) <= exported, rule["alert"]


@needs_promtool
def test_promtool_accepts_the_alerting_rules():
    path = MONITORING / "daedalus-alerts.yaml"
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


@needs_promtool
def test_alerts_fire_for_the_controller_in_trouble_and_no_other():
    """tests/data/promtool/alerts_test.yaml: stalled ticks, skipped ticks, refused/failed rescales, lag past target."""
    test_file = ROOT / "tests" / "data" / "promtool" / "alerts_test.yaml"
    result = subprocess.run(["promtool", "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_dashboard_ships_as_a_grafana_sidecar_configmap():
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    assert generator["files"] == [DASHBOARD.name]
    assert generator["options"]["labels"] == {"grafana_dashboard": "1"}  # kube-prometheus-stack's sidecar label
    assert Path(MONITORING / generator["files"][0]).is_file()
