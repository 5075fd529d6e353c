"""Kubernetes manifests: every overlay and example renders with kustomize and validates against the pinned API
schemas."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from daedalus_spark.config import parse_config
from tests.conftest import ROOT
from tests.integration.kustomize import (
    DEPLOY,
    DRIVER_SIDECAR,
    EXAMPLES,
    OVERLAYS,
    find,
    kubectl_command,
    pod_template,
    rendered,
)

KUBERNETES_VERSION = "1.32.0"  # the kubectl on the machines is 1.32; kubernetes-validate ships its schemas
CRDS = ROOT / "tests" / "data" / "crd"
KUBECTL = kubectl_command()
CRD_SUBSETS = {
    "SparkApplication": "sparkapplication-v1beta2",
    "PodMonitor": "podmonitor-v1",
    "PrometheusRule": "prometheusrule-v1",
}

MIN_KUBECTL_MINOR = 27  # kustomize v5 inside (components, labels); Debian's kubernetes-client 1.20 is too old


def kubectl_problem() -> str:
    """Why the overlays cannot be rendered here ('' when they can)."""
    if KUBECTL is None:
        return "kubectl not installed, nor built (make k8s-bins): the overlays cannot be rendered with kustomize"
    out = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=30)
    try:
        minor = int("".join(ch for ch in json.loads(out.stdout)["clientVersion"]["minor"] if ch.isdigit()))
    except (ValueError, KeyError):
        return f"kubectl version unreadable: {out.stderr.strip()[:200]}"
    return "" if minor >= MIN_KUBECTL_MINOR else f"kubectl 1.{minor} is older than 1.{MIN_KUBECTL_MINOR} (kustomize v5)"


KUBECTL_PROBLEM = kubectl_problem()
needs_kubectl = pytest.mark.skipif(bool(KUBECTL_PROBLEM), reason=KUBECTL_PROBLEM or "kubectl usable")
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (test extra)")


@needs_kubectl
@pytest.mark.parametrize("target", OVERLAYS + EXAMPLES)  # monitoring/ holds custom resources only (checked below)
def test_core_resources_pass_kubernetes_validate_strict(target, tmp_path):
    docs = [d for d in rendered(target) if d["kind"] not in CRD_SUBSETS]
    if target == "spark-submit":
        docs.append(pod_template())
    path = tmp_path / f"{target}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    result = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet", "-k", KUBERNETES_VERSION, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def crd_schema(kind: str) -> dict[str, Any]:
    return yaml.safe_load((CRDS / f"{CRD_SUBSETS[kind]}.subset.yaml").read_text())


@needs_kubectl
@pytest.mark.parametrize("target", ["spark-operator", "monitoring", *EXAMPLES])
def test_custom_resources_match_their_crd_schemas(target):
    customs = [d for d in rendered(target) if d["kind"] in CRD_SUBSETS]
    assert customs
    for doc in customs:
        jsonschema.validate(doc, crd_schema(doc["kind"]))


@needs_kubectl
def test_the_crd_subsets_reject_an_unknown_field():
    app = copy.deepcopy(find(rendered("spark-operator"), "SparkApplication"))
    app["spec"]["driver"]["sidecar"] = app["spec"]["driver"].pop("sidecars")  # a typo
    with pytest.raises(jsonschema.ValidationError, match="sidecar"):
        jsonschema.validate(app, crd_schema("SparkApplication"))


def spark_operator_pods(app: dict[str, Any]) -> list[dict[str, Any]]:
    """The driver and executor pods as the operator assembles them, so their core types meet the real schemas."""
    spec, pods = app["spec"], []
    for role in ("driver", "executor"):
        part = spec[role]
        main = {
            "name": f"spark-kubernetes-{role}",
            "image": spec["image"],
            "env": part.get("env", []),
            "volumeMounts": part.get("volumeMounts", []),
            "securityContext": part.get("securityContext", {}),
            "ports": [
                {"name": p["name"], "containerPort": p["containerPort"], "protocol": p["protocol"]}
                for p in part.get("ports", [])
            ],
        }
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{app['metadata']['name']}-{role}", "labels": part.get("labels", {})},
                "spec": {
                    "serviceAccountName": part.get("serviceAccount", "default"),
                    "securityContext": part.get("podSecurityContext", {}),
                    "volumes": spec.get("volumes", []),
                    "containers": [main, *part.get("sidecars", [])],
                },
            }
        )
    return pods


@needs_kubectl
@pytest.mark.parametrize("target", ["spark-operator", *EXAMPLES])
def test_sparkapplication_core_parts_pass_kubernetes_validate_strict(target):
    app = find(rendered(target), "SparkApplication")
    for pod in spark_operator_pods(app):
        kubernetes_validate.validate(pod, KUBERNETES_VERSION, strict=True)
    monitor = find(rendered("monitoring"), "PodMonitor")
    selector_holder = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"selector": monitor["spec"]["selector"], "template": {"spec": {"containers": []}}},
    }
    kubernetes_validate.validate(selector_holder, KUBERNETES_VERSION, strict=True)


# ------------------------------------------------------------------ what the resources mean


def rules(docs: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == "Role"]


@needs_kubectl
def test_standalone_controller_may_only_get_and_patch_its_named_statefulsets_scale():
    docs = rendered("standalone")
    scale = find(docs, "Role", "daedalus-scale")["rules"]
    config = parse_config(yaml.safe_load(find(docs, "ConfigMap")["data"]["daedalus.yaml"]))
    assert scale == [
        {
            "apiGroups": ["apps"],
            "resources": ["statefulsets/scale"],
            "resourceNames": ["spark-worker"],
            "verbs": ["get", "patch"],
        }
    ]
    assert (config.actuator.kind, config.kubernetes.kind, config.kubernetes.name) == (
        "kubernetes",
        "StatefulSet",
        "spark-worker",
    )
    find(docs, "StatefulSet", config.kubernetes.name)
    events = find(docs, "Role", "daedalus-events")["rules"]
    assert events == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
    bound = {(b["roleRef"]["name"], s["name"]) for b in docs if b["kind"] == "RoleBinding" for s in b["subjects"]}
    assert bound == {("daedalus-scale", "daedalus"), ("daedalus-events", "daedalus")}


@needs_kubectl
@pytest.mark.parametrize("overlay", DRIVER_SIDECAR)
def test_sidecar_service_account_has_no_cluster_wide_or_apps_rights(overlay):
    docs = rendered(overlay)
    assert not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    granted = {
        (g, r, v)
        for role in rules(docs)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert {g for g, _, _ in granted} == {""}  # core group only: no scale, no apps
    assert {("", "pods", "list"), ("", "events", "create"), ("", "events", "patch")} <= granted
    assert not {(g, r, v) for g, r, v in granted if r in ("secrets", "roles", "rolebindings")}


def our_containers(target: str) -> list[dict[str, Any]]:
    """Every container spec this project defines (the driver's own containers are Spark's)."""
    out: list[dict[str, Any]] = []
    for doc in rendered(target):
        spec = doc.get("spec", {})
        out += spec.get("template", {}).get("spec", {}).get("containers", [])
        out += spec.get("driver", {}).get("sidecars", [])
    if target == "spark-submit":
        out += [c for c in pod_template()["spec"]["initContainers"] if c["name"] == "daedalus-controller"]
    return out


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS + EXAMPLES)
def test_the_controller_container_gets_every_job_label_variable_its_config_names(overlay):
    config = parse_config(yaml.safe_load(find(rendered(overlay), "ConfigMap")["data"]["daedalus.yaml"]), overlay)
    controllers = [c for c in our_containers(overlay) if c["name"] in ("daedalus-controller", "controller")]
    assert controllers
    for container in controllers:
        env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container["env"]}
        for label, variable in config.monitor.job_labels_env.items():
            assert env.get(variable), f"{overlay}: {variable} (monitor.job_labels_env.{label}) is not set"
        assert env["DAEDALUS_NAMESPACE"] == "metadata.namespace"


@needs_kubectl
def test_spark_submit_controller_is_a_native_sidecar_so_the_driver_pod_completes():
    spec = pod_template()["spec"]
    assert [c["name"] for c in spec["containers"]] == ["spark-kubernetes-driver"]
    sidecars = [c for c in spec["initContainers"] if c.get("restartPolicy") == "Always"]
    assert [c["name"] for c in sidecars] == ["daedalus-controller"]


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS + EXAMPLES)
def test_one_scrape_mechanism_the_podmonitor_and_no_annotations(overlay):
    docs = [*rendered(overlay), pod_template()] if overlay == "spark-submit" else list(rendered(overlay))
    text = yaml.safe_dump_all(docs)
    assert "prometheus.io/" not in text


@needs_kubectl
def test_podmonitor_and_rules_carry_the_release_label_kube_prometheus_stack_selects():
    monitoring = [d for d in rendered("monitoring") if d["kind"] in ("PodMonitor", "PrometheusRule")]
    assert len(monitoring) == 3  # the PodMonitor, the recording rules and the alerts
    assert all(d["metadata"]["labels"]["release"] == "kube-prometheus-stack" for d in monitoring)


@needs_kubectl
def test_standalone_driver_service_publishes_not_ready_addresses():
    assert find(rendered("standalone"), "Service", "wordcount-driver")["spec"]["publishNotReadyAddresses"] is True


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS + EXAMPLES)
def test_containers_are_non_root_read_only_bounded_and_the_controller_is_probed(overlay):
    containers = our_containers(overlay)
    assert containers
    for c in containers:
        security = c["securityContext"]
        assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False, c["name"]
        assert security["capabilities"]["drop"] == ["ALL"], c["name"]
        assert set(c["resources"]) == {"requests", "limits"}, c["name"]
    controller = [c for c in containers if c["image"].endswith("/controller:0.1.0")]
    assert len(controller) == 1
    (c,) = controller
    assert c["args"] == ["run", "--config", "/etc/daedalus/daedalus.yaml"]
    assert c["securityContext"].get("runAsNonRoot", True) and c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    if overlay == "standalone":  # its own pod: readiness takes only the controller out of its Service
        assert c["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    else:  # a sidecar of the driver pod: not ready would take the driver out of its own Service
        assert "readinessProbe" not in c, f"{overlay}: the controller sidecar must not have a readinessProbe"
    assert {"name": "metrics", "containerPort": 9097} in c["ports"]


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS + EXAMPLES)
def test_configs_are_valid_and_every_query_is_a_recorded_rule(overlay):
    config = parse_config(yaml.safe_load(find(rendered(overlay), "ConfigMap")["data"]["daedalus.yaml"]), overlay)
    recorded = {
        r["record"]
        for g in find(rendered("monitoring"), "PrometheusRule", "daedalus-spark")["spec"]["groups"]
        for r in g["rules"]
    }
    signal = "query_cpu" if config.controller.utilization_signal == "cpu" else "query_busy"
    for key in ("query_workload", "query_throughput", signal, "query_lag", "query_executors", "query_uptime"):
        query = getattr(config.monitor, key)
        assert query.removesuffix("{$selector}") in recorded, f"{overlay}: monitor.{key} is not a recording rule"
        assert query.endswith("{$selector}"), f"{overlay}: monitor.{key} does not select the job"
    # Every job label the rules keep is selected, from the pod's own environment (downward API).
    expected = {"namespace", "application_id"} if overlay != "standalone" else {"namespace"}
    assert set(config.monitor.job_labels_env) == expected
    assert config.runtime.metrics_port == 9097 and config.runtime.metrics_host == "0.0.0.0"
    assert config.controller.knowledge_path.startswith("/var/lib/daedalus/")  # on the knowledge volume
    assert config.monitor.rate_window_s == 120 and config.monitor.scrape_interval_s == 30  # the rules' window


def test_prometheusrule_carries_the_plain_rule_file():
    plain = yaml.safe_load((DEPLOY / "monitoring" / "daedalus-rules.yaml").read_text())
    wrapped = yaml.safe_load((DEPLOY / "monitoring" / "prometheusrule.yaml").read_text())
    assert wrapped["spec"]["groups"] == plain["groups"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed: rule expressions unparsed")
def test_promtool_accepts_the_recording_rules():
    result = subprocess.run(
        ["promtool", "check", "rules", str(DEPLOY / "monitoring" / "daedalus-rules.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 10 rules found" in result.stdout


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed: rules not unit-tested")
def test_recording_rules_keep_two_jobs_in_one_prometheus_apart():
    """tests/data/promtool/rules_test.yaml: two applications, one namespace, the same executor ids."""
    test_file = ROOT / "tests" / "data" / "promtool" / "rules_test.yaml"
    result = subprocess.run(["promtool", "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed: queries unparsed")
@pytest.mark.parametrize("labels", [pytest.param({}, id="no-labels"), pytest.param({"namespace": "a"}, id="labels")])
def test_every_default_and_overlay_query_parses_with_its_selector(labels, tmp_path):
    from daedalus_spark.config import Config
    from daedalus_spark.monitor.prometheus import queries

    configs = [Config()]
    examples = [f"examples/{example}" for example in EXAMPLES]
    for overlay in ("components/spark-driver", "components/wordcount", "overlays/standalone", *examples):
        configs.append(parse_config(yaml.safe_load((DEPLOY / overlay / "daedalus.yaml").read_text()), overlay))
    exprs = [q for c in configs for signal in ("cpu", "busy_time") for q in queries(c.monitor, signal, labels).values()]
    rules = [{"record": f"q:{i}", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "queries", "rules": rules}]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfiles_run_as_non_root_and_the_controller_carries_no_spark():
    controller = (ROOT / "deploy" / "Dockerfile.controller").read_text()
    job = (ROOT / "deploy" / "Dockerfile.job").read_text()
    last_user = [line for line in controller.splitlines() if line.startswith("USER ")][-1]
    assert last_user.split()[1] not in ("root", "0") and "pyspark" not in controller.lower()
    assert 'ENTRYPOINT ["daedalus-spark"]' in controller
    # the core and the client it actuates with, nothing more, at the tested versions
    assert 'pip install -c constraints.txt ".[kubernetes]"' in controller
    with (ROOT / "pyproject.toml").open("rb") as f:
        core = " ".join(tomllib.load(f)["project"]["dependencies"]).lower()
    assert not any(extra in core for extra in ("pyspark", "matplotlib", "kubernetes"))
    assert [line for line in job.splitlines() if line.startswith("USER ")][-1] == "USER 185"
    assert "spark-sql-kafka-0-10_2.13" in job  # the Kafka source is baked in: no download at submit time
    # the job image installs the package as a user does into a job image with PySpark: the agent extra, which (with
    # the core) pulls no PySpark, at the tested versions; no hand-kept list of dependencies beside it
    assert 'pip install -c /opt/daedalus/constraints.txt "/opt/daedalus[agent]"' in job
    assert "--no-deps" not in job
    with (ROOT / "pyproject.toml").open("rb") as f:
        agent = " ".join(tomllib.load(f)["project"]["optional-dependencies"]["agent"]).lower()
    assert "pyspark" not in agent


def final_stage(dockerfile: str) -> list[str]:
    """The instructions of the last build stage, continuation lines joined."""
    lines = dockerfile.replace("\\\n", " ").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("FROM ")]
    return [line for line in lines[starts[-1] :] if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("name", ["Dockerfile.controller", "Dockerfile.job"])
def test_dockerfile_base_python_meets_requires_python_and_pins_hold(name):
    from packaging.specifiers import SpecifierSet

    text = (ROOT / "deploy" / name).read_text()
    stage = final_stage(text)
    image = stage[0].split()[1]
    assert image.startswith("python:"), f"{name}: the final stage is not an official Python image ({image})"
    python = image.removeprefix("python:").split("-")[0]
    with (ROOT / "pyproject.toml").open("rb") as f:
        requires = tomllib.load(f)["project"]["requires-python"]
    assert python in SpecifierSet(requires), f"{name}: Python {python} does not meet requires-python {requires}"
    # hadolint-style: pinned bases, no latest, apt lists removed, pip through the constraints, non-root at the end.
    assert all(":" in line.split()[1] and ":latest" not in line for line in stage if line.startswith("FROM "))
    for line in stage:
        if "apt-get install" in line:
            assert "--no-install-recommends" in line and "rm -rf /var/lib/apt/lists" in line, line
        if "pip install" in line and "--no-deps" not in line.split("pip install")[1].split("&&")[0]:
            assert "-c " in line and "constraints.txt" in line, f"{name}: pip install without constraints: {line}"
    assert [line for line in stage if line.startswith("USER ")][-1].split()[1] not in ("root", "0")


def test_job_image_spark_is_the_pyspark_the_project_installs():
    job = (ROOT / "deploy" / "Dockerfile.job").read_text()
    spark = next(line.split("=")[1] for line in job.splitlines() if line.startswith("ARG SPARK_VERSION="))
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    assert pins["pyspark"] == spark
    assert "openjdk-17-jre-headless" in job and "FROM spark:${SPARK_VERSION}-scala2.13-java17" in job
    app = yaml.safe_load((DEPLOY / "overlays" / "spark-operator" / "sparkapplication.yaml").read_text())
    assert app["spec"]["sparkVersion"] == spark
    assert not pins["pandas"].startswith("3."), "PySpark 4.2 does not fully support pandas 3"


@needs_kubectl
@pytest.mark.parametrize("overlay", ["spark-operator", "standalone"])
def test_images_are_replaced_in_one_place(overlay, tmp_path):
    shutil.copytree(DEPLOY, tmp_path / "kubernetes")
    component = tmp_path / "kubernetes" / "components" / "images" / "kustomization.yaml"
    images = yaml.safe_load(component.read_text())
    for image in images["images"]:
        image |= {"newName": "registry.example/" + image["name"].rsplit("/", 1)[1], "newTag": "9.9"}
    component.write_text(yaml.safe_dump(images))
    out = subprocess.run(
        [str(KUBECTL), "kustomize", str(tmp_path / "kubernetes" / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "ghcr.io/daedalus-spark" not in out.stdout
    assert out.stdout.count("registry.example/") >= 2


def test_manifest_paths_named_in_the_docs_exist():
    text = (ROOT / "docs" / "kubernetes.md").read_text()
    for overlay in OVERLAYS:
        assert f"deploy/kubernetes/overlays/{overlay}" in text
    assert Path(DEPLOY / "monitoring" / "kustomization.yaml").exists()
    attach = (ROOT / "docs" / "attach.md").read_text()
    for example in EXAMPLES:
        assert f"deploy/kubernetes/examples/{example}" in attach
    for component in re.findall(r"\.\./\.\./components/([\w-]+)", attach):
        assert (DEPLOY / "components" / component / "kustomization.yaml").exists(), component
