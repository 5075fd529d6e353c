"""The standalone controller as it starts, against the real kube-apiserver: the overlay's own config (with a
kubeconfig in place of the pod's service-account files), the sidecar's wiring, and one rescale with its Event."""

from __future__ import annotations

import pytest
import yaml
from kubernetes import client as k8s

from daedalus_spark.config import parse_config
from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator
from daedalus_spark.execute.port import Outcome
from daedalus_spark.runtime.kubernetes_events import COMPONENT, EventPublisher
from daedalus_spark.runtime.wiring import build_sidecar
from tests.integration.k8s_backends import Real
from tests.integration.k8s_helpers import kubeconfig, step
from tests.integration.kustomize import find, rendered

pytestmark = pytest.mark.apiserver


def pod_environment(namespace: str) -> dict[str, str]:
    """The controller container's environment as the kubelet would fill it in (downward API, the secret's token)."""
    deployment = find(rendered("standalone"), "Deployment", "daedalus-controller")
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "controller"]
    fields = {"metadata.namespace": namespace, "metadata.name": "daedalus-controller-0", "metadata.uid": "uid-0"}
    environ = {}
    for variable in container.get("env", []):
        source = variable.get("valueFrom", {})
        if "value" in variable:
            environ[variable["name"]] = variable["value"]
        elif "fieldRef" in source:
            environ[variable["name"]] = fields[source["fieldRef"]["fieldPath"]]
        elif "secretKeyRef" in source:
            environ[variable["name"]] = "0123456789abcdef" * 3
    return environ


def test_the_standalone_controller_scales_its_statefulset_and_says_so_in_an_event_on_it(apiserver, tmp_path):
    real = Real(apiserver, rbac_from=("standalone",))
    token = real.controller.configuration.api_key["BearerToken"]
    text = find(rendered("standalone"), "ConfigMap")["data"]["daedalus.yaml"]
    data = yaml.safe_load(text.replace("/var/lib/daedalus", str(tmp_path)))  # the knowledge volume's mount
    data["kubernetes"] |= {
        "in_cluster": False,
        "kubeconfig": str(kubeconfig(tmp_path / "kc", apiserver, token, real.namespace)),
    }
    config = parse_config(data, "standalone overlay")

    sidecar = build_sidecar(config, dry_run=False, environ=pod_environment(real.namespace))
    actuator = sidecar.actuator
    assert isinstance(actuator, KubernetesScaleActuator) and actuator.namespace == real.namespace
    result = actuator.apply(3)
    assert result.outcome is Outcome.ACCEPTED, result.detail
    assert real.replicas("StatefulSet", "spark-worker") == 3

    (events,) = [p for p in sidecar.loop.publishers if isinstance(p, EventPublisher)]
    events.publish(step(Outcome.ACCEPTED, current=2, target=3))
    # ours only: a shared, busy API server may hold others in the namespace; all of them are shown if ours is not one
    everything = real.events()
    ours = [e for e in everything if e.get("source", {}).get("component") == COMPONENT]
    assert len(ours) == 1, f"one event from {COMPONENT}, the namespace has: {everything}"
    (event,) = ours
    statefulset = k8s.AppsV1Api(real.admin).read_namespaced_stateful_set("spark-worker", real.namespace)
    # `kubectl describe statefulset spark-worker` lists the events whose involvedObject is it, uid included
    assert event["involvedObject"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "spark-worker",
        "namespace": real.namespace,
        "uid": statefulset.metadata.uid,
    }
    assert event["reason"] == "SuccessfulRescale" and "scale-out 2 -> 3 accepted" in event["message"]
