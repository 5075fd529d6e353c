"""The kustomize components that add the controller to a user's own Spark job (deploy/kubernetes/components): they
carry nothing of WordCount, keep the job's own volumes, variables and mounts, require the job's controller config,
and build the two example jobs (a Java job with the JVM plugin, a PySpark job with the Python agent) whose
partition counts agree everywhere. Validation against the schemas and the API server is in the manifest tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from daedalus_spark.config import parse_config, with_topic_partitions
from tests.conftest import ROOT
from tests.integration.kustomize import DEPLOY, EXAMPLES, TARGETS, find, kubectl_command, pod_template, rendered

pytestmark = pytest.mark.skipif(kubectl_command() is None, reason="no kubectl: run `make k8s-bins`")

COMPONENTS = DEPLOY / "components"
GENERIC = [
    "spark-driver",
    "spark-driver-pod",
    "jvm-plugin",
    "controller-deployment",
]  # what a user's kustomization takes
# The objects a component creates itself (beyond ../../base): the controller-deployment component has its own pod.
OWN_KINDS = {
    "controller-deployment": {"ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim", "Service", "Deployment"}
}
JOB_KEYS = {("controller", "max_scaleout"), ("capacity", "partitions"), ("agent", "max_executors")}
PARTITIONS = {"orders-jvm": 12, "clickstream-pyspark": 6, "spark-operator": 8}
PLUGIN_CLASS = "daedalus.spark.plugin.DaedalusPlugin"


def kustomize(folder: Path) -> subprocess.CompletedProcess[str]:
    command = kubectl_command()
    assert command is not None
    return subprocess.run([command, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)


def app_of(target: str) -> dict[str, Any]:
    return find(rendered(target), "SparkApplication")


def config_of(target: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(find(rendered(target), "ConfigMap")["data"]["daedalus.yaml"])
    return data


def names(items: list[dict[str, Any]], key: str = "name") -> list[str]:
    return [item[key] for item in items]


@pytest.mark.parametrize("component", GENERIC)
def test_the_components_carry_nothing_of_wordcount_or_of_any_job(component):
    for path in sorted((COMPONENTS / component).iterdir()):
        text = path.read_text()
        assert "wordcount" not in text.lower(), f"{path.relative_to(ROOT)} names WordCount"
        claims = re.findall(r"claimName: (\S+)", text)
        assert set(claims) <= {"daedalus-knowledge"}, f"{path.relative_to(ROOT)} mounts a job's volume: {claims}"
    kustomization = yaml.safe_load((COMPONENTS / component / "kustomization.yaml").read_text())
    files = [COMPONENTS / component / r for r in kustomization.get("resources", []) if not r.startswith("..")]
    kinds = {d["kind"] for path in files for d in yaml.safe_load_all(path.read_text()) if d}
    assert kinds <= OWN_KINDS.get(component, {"Role", "RoleBinding"}), f"{component} creates {kinds}"
    config = COMPONENTS / component / "daedalus.yaml"
    template = yaml.safe_load(
        (config if config.exists() else COMPONENTS / "spark-driver" / "daedalus.yaml").read_text()
    )
    assert not {(section, key) for section, key in JOB_KEYS if key in template.get(section, {})}


def test_the_component_alone_stops_the_build_for_want_of_the_jobs_config(tmp_path):
    shutil.copytree(DEPLOY, tmp_path / "kubernetes")
    job = tmp_path / "kubernetes" / "examples" / "orders-jvm" / "kustomization.yaml"
    kustomization = yaml.safe_load(job.read_text())
    del kustomization["configMapGenerator"]
    job.write_text(yaml.safe_dump(kustomization))
    out = kustomize(job.parent)
    assert out.returncode != 0
    assert "nothing selected by ConfigMap" in out.stderr and "daedalus-config" in out.stderr, out.stderr


@pytest.mark.parametrize("target", EXAMPLES)
def test_the_example_is_its_own_job_in_its_own_namespace(target):
    docs = rendered(target)
    text = yaml.safe_dump_all(docs).lower()
    assert "wordcount" not in text
    namespace = yaml.safe_load((TARGETS[target] / "kustomization.yaml").read_text())["namespace"]
    assert {d["metadata"].get("namespace") for d in docs} == {namespace}
    assert app_of(target)["metadata"]["name"] != "wordcount"


@pytest.mark.parametrize("target", ["spark-operator", *EXAMPLES])
def test_the_patch_adds_to_the_jobs_own_lists_and_keeps_them(target):
    own = yaml.safe_load((TARGETS[target] / "sparkapplication.yaml").read_text())["spec"]
    spec = app_of(target)["spec"]
    driver = spec["driver"]
    added = {
        "volumes": ["daedalus-config", "knowledge", "tmp"],
        "env": ["DAEDALUS_AGENT_TOKEN"],
        "volumeMounts": ["daedalus-config"],
        "sidecars": ["daedalus-controller"],
        "ports": ["agent"],
    }
    for field, component_names in added.items():
        got = names(spec["volumes"] if field == "volumes" else driver[field])
        mine = names(own["volumes"] if field == "volumes" else own["driver"].get(field, []))
        assert sorted(got) == sorted(mine + component_names), field
        assert len(set(got)) == len(got), f"{field}: a name twice"
    assert driver["serviceAccount"] == "daedalus"
    assert driver["labels"]["app.kubernetes.io/component"] == "driver"  # the PodMonitor's selector
    for key, value in own["driver"].get("labels", {}).items():
        assert driver["labels"][key] == value
    assert spec["sparkConf"]["spark.dynamicAllocation.enabled"] == "false" and spec["dynamicAllocation"] == {
        "enabled": False
    }
    for key, value in own.get("sparkConf", {}).items():
        assert spec["sparkConf"][key] == value


@pytest.mark.parametrize("target", ["spark-operator", *EXAMPLES])
def test_every_object_the_sparkapplication_names_is_rendered_with_it(target):
    docs = rendered(target)
    spec = app_of(target)["spec"]
    rendered_names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for volume in spec["volumes"]:
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in rendered_names, volume
        if "persistentVolumeClaim" in volume:
            assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in rendered_names, volume
    assert ("ServiceAccount", spec["driver"]["serviceAccount"]) in rendered_names
    bound = {s["name"] for d in docs if d["kind"] == "RoleBinding" for s in d["subjects"]}
    assert bound == {spec["driver"]["serviceAccount"]}


@pytest.mark.parametrize("target", ["spark-operator", *EXAMPLES])
def test_the_jobs_config_is_the_components_plus_its_partition_count_everywhere(target):
    template = yaml.safe_load((COMPONENTS / "spark-driver" / "daedalus.yaml").read_text())
    data = config_of(target)
    job = {(section, key): data[section].pop(key) for section, key in JOB_KEYS if key in data.get(section, {})}
    data = {section: values for section, values in data.items() if values}
    assert data == template, "the job's config differs from the component's beyond its job keys"
    partitions = PARTITIONS[target]
    config = parse_config(config_of(target), target)
    assert config.controller.max_scaleout == config.capacity.partitions == 0  # the topic's count, as it is listed
    followed, warnings = with_topic_partitions(config, partitions)
    assert followed.controller.max_scaleout == followed.capacity.partitions == partitions and not warnings
    conf = app_of(target)["spec"]["sparkConf"]
    if "spark.plugins" in conf:  # the JVM agent reads its bound from the SparkConf
        assert int(conf["spark.daedalus.agent.maxExecutors"]) == partitions
        assert ("agent", "max_executors") not in job  # nothing reads it: the Python agent is not started
    else:  # the Python agent started from this config (or the job's own AgentConfig with the same bound)
        assert config.agent.max_executors == partitions
    assert int(conf["spark.sql.shuffle.partitions"]) == partitions


def test_the_jvm_plugin_component_names_the_plugin_class_and_settings_it_reads():
    conf = app_of("orders-jvm")["spec"]["sparkConf"]
    assert conf["spark.plugins"] == PLUGIN_CLASS
    source = ROOT / "jvm" / "src" / "main" / "java" / (PLUGIN_CLASS.replace(".", "/") + ".java")
    assert re.search(r"public final class DaedalusPlugin implements SparkPlugin", source.read_text())
    read = set(re.findall(r'"(\w+)"', (source.parent / "AgentConfig.java").read_text()))
    for key in conf:
        if key.startswith("spark.daedalus.agent."):
            assert key.removeprefix("spark.daedalus.agent.") in read, f"{key}: the plugin has no such setting"
    assert conf["spark.daedalus.agent.host"] == "0.0.0.0"  # the PodMonitor scrapes the driver's agent port
    assert conf["spark.daedalus.agent.port"] == str(app_of("orders-jvm")["spec"]["driver"]["ports"][0]["containerPort"])
    assert conf["spark.decommission.enabled"] == "true"
    assert "spark.plugins" not in app_of("clickstream-pyspark")["spec"]["sparkConf"]


def test_the_sparkapplication_sidecar_and_the_pod_template_controller_are_one_container():
    (sidecar,) = app_of("spark-operator")["spec"]["driver"]["sidecars"]
    (native,) = [c for c in pod_template()["spec"]["initContainers"] if c["name"] == "daedalus-controller"]
    assert native.pop("restartPolicy") == "Always"
    assert native == sidecar
    template, app = pod_template()["spec"], app_of("spark-operator")["spec"]
    component_volumes = [v for v in app["volumes"] if v["name"] != "checkpoint"]
    assert [v for v in template["volumes"] if v["name"] != "checkpoint"] == component_volumes
    (driver,) = template["containers"]
    assert driver["env"] == app["driver"]["env"]


def test_a_name_prefix_gives_a_second_job_in_the_namespace_objects_of_its_own(tmp_path):
    shutil.copytree(DEPLOY, tmp_path / "kubernetes")
    job = tmp_path / "kubernetes" / "examples" / "clickstream-pyspark" / "kustomization.yaml"
    job.write_text(job.read_text() + "namePrefix: sessions-\n")
    out = kustomize(job.parent)
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert all(d["metadata"]["name"].startswith("sessions-") for d in docs)
    spec = find(tuple(docs), "SparkApplication")["spec"]
    test_names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ServiceAccount", spec["driver"]["serviceAccount"]) in test_names
    for volume in spec["volumes"]:
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in test_names
        if "persistentVolumeClaim" in volume:
            assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in test_names
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert {s["name"] for b in bindings for s in b["subjects"]} == {"sessions-daedalus"}
    assert {b["roleRef"]["name"] for b in bindings} == {"sessions-daedalus-events", "sessions-spark-driver"}


def test_the_pod_template_component_adds_to_any_drivers_own_template(tmp_path):
    own_env = {"name": "ORDERS_ENV", "value": "production"}
    own_mount = {"name": "spark-local", "mountPath": "/var/spark-local"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orders-driver", "labels": {"app.kubernetes.io/name": "orders"}},
        "spec": {
            "containers": [{"name": "spark-kubernetes-driver", "env": [own_env], "volumeMounts": [own_mount]}],
            "volumes": [{"name": "spark-local", "emptyDir": {}}],
        },
    }
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    component = os.path.relpath(COMPONENTS / "spark-driver-pod", tmp_path)  # kustomize refuses absolute paths
    kustomization = {"resources": ["pod.yaml"], "components": [component]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    out = kustomize(tmp_path)
    assert out.returncode == 0, out.stderr
    (template,) = [d for d in yaml.safe_load_all(out.stdout) if d]
    spec = template["spec"]
    assert template["metadata"]["labels"]["app.kubernetes.io/name"] == "orders"
    assert template["metadata"]["labels"]["app.kubernetes.io/component"] == "driver"
    (driver,) = spec["containers"]
    assert sorted(names(driver["env"])) == ["DAEDALUS_AGENT_TOKEN", "ORDERS_ENV"] and own_env in driver["env"]
    assert own_mount in driver["volumeMounts"] and "daedalus-config" in names(driver["volumeMounts"])
    assert sorted(names(spec["volumes"])) == ["daedalus-config", "knowledge", "spark-local", "tmp"]
    assert names(spec["initContainers"]) == ["daedalus-controller"] and spec["serviceAccountName"] == "daedalus"
