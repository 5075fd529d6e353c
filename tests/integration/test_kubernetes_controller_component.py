"""The controller in a Deployment of its own (deploy/kubernetes/components/controller-deployment) and the example job
built with it (deploy/kubernetes/examples/orders-jvm-least-privilege): the controller's ServiceAccount holds exactly
what the controller calls on the API server in agent mode (and none of the driver's rights), the Service selects the
driver of the application the SparkApplication names and the config's agent_url names that Service, and a namePrefix
gives a second job objects of its own. The rendered objects meet the pinned schemas; the RBAC is also checked
against a real kube-apiserver, where the controller's own calls succeed with its token and creating a pod does not."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from daedalus_spark.config import parse_config
from daedalus_spark.execute.kubernetes_pods import ExecutorPodWatcher
from daedalus_spark.execute.port import Outcome
from daedalus_spark.runtime.kubernetes_events import (
    EventPublisher,
    ObjectRef,
    _driver_owners,
    driver_events_object,
    event_for,
)
from tests.conftest import ROOT
from tests.integration.k8s_backends import watcher_settings
from tests.integration.k8s_helpers import FakeTime, Grant, grants, step
from tests.integration.kustomize import DEPLOY, find, kubectl_command, render

pytestmark = pytest.mark.skipif(kubectl_command() is None, reason="no kubectl: run `make k8s-bins`")

COMPONENT = DEPLOY / "components" / "controller-deployment"
EXAMPLE = "orders-jvm-least-privilege"
CONTROLLER_SA = "daedalus-controller"
DRIVER_SA = "spark-driver"
AGENT_SERVICE = "daedalus-agent"
JOB_KEYS = {("controller", "max_scaleout"), ("capacity", "partitions"), ("agent", "max_executors")}
# What the controller calls on the API server in agent mode, from its code: the verb of each client method.
AGENT_MODE_MODULES = ["daedalus_spark/execute/kubernetes_pods.py", "daedalus_spark/runtime/kubernetes_events.py"]
CLIENT_VERBS = {"read": "get", "list": "list", "create": "create", "patch": "patch", "delete": "delete"}
KUBERNETES_VERSION = "1.32.0"  # the schemas the other manifest tests validate against
SPARKAPPLICATION_SCHEMA = ROOT / "tests" / "data" / "crd" / "sparkapplication-v1beta2.subset.yaml"


def kustomize(folder: Path) -> subprocess.CompletedProcess[str]:
    command = kubectl_command()
    assert command is not None
    return subprocess.run([command, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)


@cache
def example() -> tuple[dict[str, Any], ...]:
    return render(DEPLOY / "examples" / EXAMPLE)


def app_of(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    return find(docs, "SparkApplication")


def config_data(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(find(docs, "ConfigMap")["data"]["daedalus.yaml"])
    return data


def controller_container(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    (container,) = find(docs, "Deployment", prefixed(docs, "daedalus-controller"))["spec"]["template"]["spec"][
        "containers"
    ]
    return container


def prefixed(docs: tuple[dict[str, Any], ...], name: str) -> str:
    """`name` as rendered (with the kustomization's namePrefix, if any)."""
    (hit,) = {d["metadata"]["name"] for d in docs if d["metadata"]["name"].endswith(name)}
    return hit


def granted_to(docs: tuple[dict[str, Any], ...], account: str) -> set[Grant]:
    """Every grant the Roles bound to ServiceAccount `account` give it."""
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Role"}
    bound = [
        roles[b["roleRef"]["name"]]
        for b in docs
        if b["kind"] == "RoleBinding" and any(s["name"] == account for s in b["subjects"])
    ]
    return set().union(*(grants(role["rules"]) for role in bound))


def client_calls() -> set[tuple[str, str]]:
    """(resource, RBAC verb) of every namespaced API call in the agent-mode modules (the scale actuator's are
    actuator.kind kubernetes only)."""
    calls = set()
    for module in AGENT_MODE_MODULES:
        for verb, kind in re.findall(r"\.(\w+?)_namespaced_(\w+)\(", (ROOT / module).read_text()):
            calls.add((kind + "s", CLIENT_VERBS[verb]))
    return calls


# ------------------------------------------------------------------ the component alone


def test_the_component_ships_the_controllers_objects_and_nothing_of_a_job():
    kustomization = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    assert not any(r.startswith("..") for r in kustomization["resources"])  # not ../../base: its account is shared
    objects = [d for r in kustomization["resources"] for d in yaml.safe_load_all((COMPONENT / r).read_text()) if d]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in objects) == [
        ("Deployment", "daedalus-controller"),
        ("PersistentVolumeClaim", "daedalus-knowledge"),
        ("Role", "daedalus-controller"),
        ("Role", "spark-driver"),
        ("RoleBinding", "daedalus-controller"),
        ("RoleBinding", "spark-driver"),
        ("Service", "daedalus-agent"),
        ("ServiceAccount", "daedalus-controller"),
        ("ServiceAccount", "spark-driver"),
    ]
    template = yaml.safe_load((COMPONENT / "daedalus.yaml").read_text())
    assert not {(section, key) for section, key in JOB_KEYS if key in template.get(section, {})}
    # The application's name is nowhere in the component: a placeholder the replacements overwrite.
    text = "\n".join(path.read_text() for path in COMPONENT.iterdir())
    assert "orders" not in text and "SPARK-APPLICATION-NAME" in text


def test_the_component_without_the_jobs_config_or_without_an_application_stops_the_build(tmp_path):
    shutil.copytree(DEPLOY, tmp_path / "kubernetes")
    job = tmp_path / "kubernetes" / "examples" / EXAMPLE / "kustomization.yaml"
    original = yaml.safe_load(job.read_text())
    no_config = {k: v for k, v in original.items() if k != "configMapGenerator"}
    job.write_text(yaml.safe_dump(no_config))
    out = kustomize(job.parent)
    assert out.returncode != 0 and "nothing selected by ConfigMap" in out.stderr, out.stderr
    no_app = {**original, "resources": []}
    job.write_text(yaml.safe_dump(no_app))
    out = kustomize(job.parent)
    assert out.returncode != 0 and "SparkApplication" in out.stderr, out.stderr


# ------------------------------------------------------------------ RBAC: what the controller may do


def test_the_controllers_service_account_has_exactly_the_calls_of_its_code():
    docs = example()
    app = app_of(docs)["metadata"]["name"]
    role = find(docs, "Role", "daedalus-controller")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "resourceNames": [app], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    assert granted_to(docs, CONTROLLER_SA) == grants(role["rules"])  # one Role bound, nothing else
    assert {(resource, verb) for _, resource, _, verb in grants(role["rules"])} == client_calls()
    binding = find(docs, "RoleBinding", "daedalus-controller")
    assert binding["roleRef"]["name"] == "daedalus-controller"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": CONTROLLER_SA, "namespace": "orders"}]
    deployment = find(docs, "Deployment", "daedalus-controller")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == CONTROLLER_SA
    assert not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]


def test_the_controller_holds_none_of_the_drivers_rights():
    docs = example()
    controller = granted_to(docs, CONTROLLER_SA)
    driver = granted_to(docs, DRIVER_SA)
    assert ("", "pods", "*", "create") in driver  # Spark's driver starts its executors
    writes = {"create", "delete", "deletecollection", "update", "patch", "watch"}
    assert not {g for g in controller if g[1] == "pods" and g[3] in writes}, "the controller may change pods"
    assert {g[1] for g in controller} == {"events", "pods"}  # no services, configmaps, secrets, RBAC, apps
    assert not controller & driver - {("", "pods", "*", "list")}  # the one right both hold: list pods
    assert app_of(docs)["spec"]["driver"]["serviceAccount"] == DRIVER_SA != CONTROLLER_SA
    bound = {(b["roleRef"]["name"], s["name"]) for b in docs if b["kind"] == "RoleBinding" for s in b["subjects"]}
    assert bound == {("daedalus-controller", CONTROLLER_SA), ("spark-driver", DRIVER_SA)}


# ------------------------------------------------------------------ the Service, the agent URL, the driver's side


def test_the_service_selects_exactly_the_driver_of_the_application():
    docs = example()
    app = app_of(docs)
    name = app["metadata"]["name"]
    service = find(docs, "Service", AGENT_SERVICE)
    assert service["spec"]["selector"] == {"spark-role": "driver", "sparkoperator.k8s.io/app-name": name}
    (port,) = service["spec"]["ports"]
    (agent,) = [p for p in app["spec"]["driver"]["ports"] if p["name"] == port["targetPort"]]
    assert agent["containerPort"] == port["port"] == int(app["spec"]["sparkConf"]["spark.daedalus.agent.port"])
    assert app["spec"]["sparkConf"]["spark.daedalus.agent.host"] == "0.0.0.0"  # reached from the controller's pod
    # The driver pod is named as the application: the one pod the controller may get, its events' owner.
    env = {e["name"]: e for e in controller_container(docs)["env"]}
    assert app["spec"]["sparkConf"]["spark.kubernetes.driver.pod.name"] == name
    assert env["DAEDALUS_POD_NAME"]["value"] == name
    assert "DAEDALUS_POD_UID" not in env and "DAEDALUS_SPARK_APP_ID" not in env  # the controller's pod's: wrong


def test_the_agent_url_names_the_service_and_its_port_and_both_sides_share_the_token():
    docs = example()
    config = parse_config(config_data(docs), EXAMPLE)
    service = find(docs, "Service", AGENT_SERVICE)
    url = urlsplit(config.actuator.agent_url)
    assert config.actuator.kind == "agent"
    assert url.hostname == service["metadata"]["name"] and url.port == service["spec"]["ports"][0]["port"]
    assert config.agent.host == "0.0.0.0"  # the Python agent's address, from the same file mounted in the driver
    token = {"secretKeyRef": {"name": "daedalus-agent-token", "key": "token"}}
    driver_env = {e["name"]: e.get("valueFrom") for e in app_of(docs)["spec"]["driver"]["env"]}
    controller_env = {e["name"]: e.get("valueFrom") for e in controller_container(docs)["env"]}
    assert driver_env[config.agent.token_env] == controller_env[config.actuator.token_env] == token


def test_the_patch_gives_the_driver_only_its_side_and_keeps_the_jobs_own_lists():
    own = yaml.safe_load((DEPLOY / "examples" / EXAMPLE / "sparkapplication.yaml").read_text())["spec"]
    spec = app_of(example())["spec"]
    driver = spec["driver"]
    assert sorted(v["name"] for v in spec["volumes"]) == sorted(
        [v["name"] for v in own["volumes"]] + ["daedalus-config"]
    )
    assert sorted(e["name"] for e in driver["env"]) == sorted(
        [e["name"] for e in own["driver"]["env"]] + ["DAEDALUS_AGENT_TOKEN"]
    )
    assert [m["name"] for m in driver["volumeMounts"]] == ["daedalus-config", "spark-local"]
    assert [p["name"] for p in driver["ports"]] == ["agent"]
    assert "sidecars" not in driver and "initContainers" not in driver  # the controller is not in this pod
    assert driver["labels"] == {**own["driver"]["labels"], "app.kubernetes.io/component": "driver"}  # PodMonitor
    assert spec["sparkConf"]["spark.dynamicAllocation.enabled"] == "false" and spec["dynamicAllocation"] == {
        "enabled": False
    }
    for key, value in own["sparkConf"].items():
        assert spec["sparkConf"][key] == value
    names = {(d["kind"], d["metadata"]["name"]) for d in example()}
    assert ("ConfigMap", spec["volumes"][0]["configMap"]["name"]) in names
    assert ("ServiceAccount", driver["serviceAccount"]) in names


def test_the_jobs_config_is_the_components_plus_its_partition_count():
    template = yaml.safe_load((COMPONENT / "daedalus.yaml").read_text())
    data = config_data(example())
    job = {(section, key): data[section].pop(key) for section, key in JOB_KEYS if key in data.get(section, {})}
    assert {section: values for section, values in data.items() if values} == template
    assert job == {}  # the partition count is the topic's, as the monitor lists it
    conf = app_of(example())["spec"]["sparkConf"]
    assert int(conf["spark.daedalus.agent.maxExecutors"]) == int(conf["spark.sql.shuffle.partitions"]) == 12
    config = parse_config(config_data(example()), EXAMPLE)
    # Outside the driver pod the application id is unknown: the job's series are its namespace's.
    assert config.monitor.job_labels_env == {"namespace": "DAEDALUS_NAMESPACE"}
    env = {
        e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        for e in controller_container(example())["env"]
    }
    assert env["DAEDALUS_NAMESPACE"] == "metadata.namespace"


def test_the_controllers_pod_is_as_the_standalone_controllers():
    docs = example()
    mine = find(docs, "Deployment", "daedalus-controller")
    standalone = find(render(DEPLOY / "overlays" / "standalone"), "Deployment", "daedalus-controller")
    assert mine["spec"]["replicas"] == 1 and mine["spec"]["strategy"] == {"type": "Recreate"}
    assert (
        mine["spec"]["template"]["spec"]["securityContext"] == standalone["spec"]["template"]["spec"]["securityContext"]
    )
    (theirs,) = standalone["spec"]["template"]["spec"]["containers"]
    container = controller_container(docs)
    for key in ("image", "args", "ports", "resources", "securityContext", "volumeMounts"):
        assert container[key] == theirs[key], key
    # Its own pod: a readiness probe is safe here; liveness (and no startup probe) as the standalone controller's.
    assert container["readinessProbe"] == theirs["readinessProbe"]
    assert container["livenessProbe"] == theirs["livenessProbe"]
    assert "startupProbe" not in container and "startupProbe" not in theirs
    volumes = {v["name"]: v for v in mine["spec"]["template"]["spec"]["volumes"]}
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ConfigMap", volumes["daedalus-config"]["configMap"]["name"]) in names
    assert ("PersistentVolumeClaim", volumes["knowledge"]["persistentVolumeClaim"]["claimName"]) in names
    # The same config in both pods: the hashed name, renamed together when the config changes.
    assert volumes["daedalus-config"]["configMap"]["name"] == app_of(docs)["spec"]["volumes"][0]["configMap"]["name"]


# ------------------------------------------------------------------ a second job


def test_a_name_prefix_gives_a_second_job_in_the_namespace_objects_of_its_own(tmp_path):
    shutil.copytree(DEPLOY, tmp_path / "kubernetes")
    job = tmp_path / "kubernetes" / "examples" / EXAMPLE
    (job / "kustomization.yaml").write_text((job / "kustomization.yaml").read_text() + "namePrefix: refunds-\n")
    config = (job / "daedalus.yaml").read_text()
    (job / "daedalus.yaml").write_text(config.replace("http://daedalus-agent:", "http://refunds-daedalus-agent:"))
    out = kustomize(job)
    assert out.returncode == 0, out.stderr
    docs = tuple(d for d in yaml.safe_load_all(out.stdout) if d)
    assert all(d["metadata"]["name"].startswith("refunds-") for d in docs)
    app = app_of(docs)
    name = app["metadata"]["name"]
    assert name == "refunds-orders"
    # Everything that names the application followed it.
    service = find(docs, "Service", "refunds-daedalus-agent")
    assert service["spec"]["selector"]["sparkoperator.k8s.io/app-name"] == name
    assert app["spec"]["sparkConf"]["spark.kubernetes.driver.pod.name"] == name
    assert {e["name"]: e.get("value") for e in controller_container(docs)["env"]}["DAEDALUS_POD_NAME"] == name
    assert find(docs, "Role", "refunds-daedalus-controller")["rules"][1]["resourceNames"] == [name]
    # And everything that names the component's objects.
    bound = {(b["roleRef"]["name"], s["name"]) for b in docs if b["kind"] == "RoleBinding" for s in b["subjects"]}
    assert bound == {
        ("refunds-daedalus-controller", "refunds-daedalus-controller"),
        ("refunds-spark-driver", "refunds-spark-driver"),
    }
    template = find(docs, "Deployment", "refunds-daedalus-controller")["spec"]["template"]["spec"]
    assert template["serviceAccountName"] == "refunds-daedalus-controller"
    assert app["spec"]["driver"]["serviceAccount"] == "refunds-spark-driver"
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for volume in [*template["volumes"], *app["spec"]["volumes"]]:
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in names
        if "persistentVolumeClaim" in volume:
            assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in names
    assert urlsplit(parse_config(config_data(docs)).actuator.agent_url).hostname == service["metadata"]["name"]
    # Nothing of the first job's is named: its objects keep theirs.
    first = {(d["kind"], d["metadata"]["name"]) for d in example()}
    assert not names & first


# ------------------------------------------------------------------ schemas


def driver_pod(app: dict[str, Any]) -> dict[str, Any]:
    """The driver pod as spark-operator assembles it from the SparkApplication, its core types to validate."""
    spec, driver = app["spec"], app["spec"]["driver"]
    container = {
        "name": "spark-kubernetes-driver",
        "image": spec["image"],
        "env": driver["env"],
        "volumeMounts": driver["volumeMounts"],
        "securityContext": driver["securityContext"],
        "ports": driver["ports"],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": spec["sparkConf"]["spark.kubernetes.driver.pod.name"], "labels": driver["labels"]},
        "spec": {
            "serviceAccountName": driver["serviceAccount"],
            "securityContext": driver["podSecurityContext"],
            "volumes": spec["volumes"],
            "containers": [container],
        },
    }


def test_the_core_objects_and_the_sparkapplication_meet_their_schemas():
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    docs = example()
    for doc in docs:
        if doc["kind"] == "SparkApplication":
            jsonschema.validate(doc, yaml.safe_load(SPARKAPPLICATION_SCHEMA.read_text()))
            kubernetes_validate.validate(driver_pod(doc), KUBERNETES_VERSION, strict=True)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


# ------------------------------------------------------------------ against a real API server


def moved(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"]["namespace"] = namespace
    for subject in doc.get("subjects", []):
        subject["namespace"] = namespace
    return doc


@pytest.mark.apiserver
def test_on_a_real_api_server_the_controller_does_its_duties_and_cannot_touch_pods(apiserver):
    from kubernetes.dynamic import DynamicClient

    namespace = "least-privilege"
    admin = apiserver.api_client()
    core = k8s.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": namespace}})
    api = DynamicClient(admin)
    docs = example()
    for doc in docs:
        if doc["kind"] in ("ServiceAccount", "Role", "RoleBinding"):
            resource = api.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
            api.server_side_apply(resource, body=moved(doc, namespace), namespace=namespace, field_manager="tests")
    app = app_of(docs)
    driver_name = app["spec"]["sparkConf"]["spark.kubernetes.driver.pod.name"]
    owner = {"apiVersion": app["apiVersion"], "kind": "SparkApplication", "name": app["metadata"]["name"]}
    owner |= {"uid": "0b9f6c1e-1111-4c3a-9d7e-5a0f0c1d2e3f", "controller": True}
    for name, role in ((driver_name, "driver"), ("other-pod", "executor")):
        pod = {
            "metadata": {"name": name, "labels": {"spark-role": role}, "ownerReferences": [owner]},
            "spec": {
                "serviceAccountName": DRIVER_SA,
                "automountServiceAccountToken": False,
                "containers": [{"name": "main", "image": "busybox:1.37"}],
            },
        }
        core.create_namespaced_pod(namespace, pod)

    controller = k8s.CoreV1Api(apiserver.service_account_client(namespace, CONTROLLER_SA, create=False))
    # Its duties, as its code does them: the driver pod's owner, an event created and then patched, the executors.
    driver = ObjectRef("v1", "Pod", driver_name, namespace)
    ref = driver_events_object(driver, _driver_owners(controller, driver, 5.0))
    assert (ref.kind, ref.name, ref.uid) == ("SparkApplication", "orders", owner["uid"])
    clock = FakeTime(1_800_000_000.0)
    events = EventPublisher(controller, ref, clock.now, 5.0, instance="controller-0")
    spec = event_for(step(Outcome.ACCEPTED))
    assert spec is not None
    events.record(spec)
    clock.sleep(60)
    events.record(spec)
    (event,) = core.list_namespaced_event(namespace).items
    assert event.count == 2 and event.involved_object.kind == "SparkApplication"
    watcher = ExecutorPodWatcher(controller, namespace, watcher_settings(), clock=clock.now, sleep=clock.sleep)
    assert watcher.check().running == 0  # listed (the pods are not running: no kubelet here)

    # And nothing more: not another pod, not a new pod, not the driver's deletion, not its services or secrets.
    refused = {
        "get another pod": lambda: controller.read_namespaced_pod("other-pod", namespace),
        "create a pod": lambda: controller.create_namespaced_pod(
            namespace, {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "x", "image": "busybox:1.37"}]}}
        ),
        "delete the driver": lambda: controller.delete_namespaced_pod(driver_name, namespace),
        "list services": lambda: controller.list_namespaced_service(namespace),
        "list secrets": lambda: controller.list_namespaced_secret(namespace),
        "watch pods": lambda: controller.list_namespaced_pod(namespace, watch=True, timeout_seconds=1),
    }
    for what, call in refused.items():
        with pytest.raises(ApiException) as refusal:
            call()
        assert refusal.value.status == 403, what

    # The rules review as the controller: exactly its Role, beyond what every account may do anyway.
    def review(client: k8s.ApiClient) -> set[Grant]:
        answer = k8s.AuthorizationV1Api(client).create_self_subject_rules_review({"spec": {"namespace": namespace}})
        return grants(answer.status.resource_rules)

    baseline = review(apiserver.service_account_client(namespace, "nobody"))
    mine = review(apiserver.service_account_client(namespace, CONTROLLER_SA, create=False))
    assert mine - baseline == grants(find(docs, "Role", "daedalus-controller")["rules"])
