"""The driver sidecar's Events against the real kube-apiserver, with the driver ServiceAccount's own rights: in advisor
mode (`run --dry-run`) a recommended rescale is a RescaleRecommended Event, counted while it repeats, on the
SparkApplication that owns the driver pod (what `kubectl describe sparkapplication` lists), else on the pod."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from daedalus_spark.config import Config, parse_config
from daedalus_spark.domain import Decision, Reason
from daedalus_spark.evidence import Evidence
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.kubecluster.apiserver import LocalApiServer
from daedalus_spark.loop import StepResult
from daedalus_spark.runtime.kubernetes_events import EventPublisher
from daedalus_spark.runtime.wiring import build_sidecar
from tests.integration.k8s_backends import Real
from tests.integration.k8s_helpers import kubeconfig
from tests.integration.kustomize import find, rendered

pytestmark = pytest.mark.apiserver
DRIVER = "wordcount-driver"


def sidecar_config(real: Real, tmp_path: Path) -> Config:
    """The spark-operator overlay's controller config, with a kubeconfig for the driver ServiceAccount's token."""
    text = find(rendered("spark-operator"), "ConfigMap")["data"]["daedalus.yaml"]
    data = yaml.safe_load(text.replace("/var/lib/daedalus", str(tmp_path)))
    token = real.controller.configuration.api_key["BearerToken"]
    path = kubeconfig(tmp_path / "kc", real.server, token, real.namespace)
    data["kubernetes"] = {**data.get("kubernetes", {}), "in_cluster": False, "kubeconfig": str(path)}
    return parse_config(data, "spark-operator overlay")


def recommended(workload_per_s: float) -> StepResult:
    """One advisor tick: 2 -> 3 decided, not applied (its numbers change from tick to tick)."""
    evidence = Evidence.from_fields({"workload_avg_per_s": workload_per_s, "capacity_current_per_s": 1000.0})
    decision = Decision(0.0, 2, 3, Reason.SCALE_OUT_SMALLEST_VALID, evidence, actuation=DryRunActuator().apply(3))
    return StepResult(0.0, decision, None, None)


def driver_pod(real: Real, owned: bool) -> tuple[k8s.V1Pod, dict[str, Any]]:
    """The driver pod (owned by the overlay's SparkApplication, as the operator makes it, or bare as spark-submit
    makes it) and the involvedObject its events must name."""
    admin = real.dynamic
    owners = []
    expected: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "name": DRIVER}
    if owned:
        real.apply(real.moved(find(rendered("spark-operator"), "SparkApplication")))
        applications = admin.resources.get(api_version="sparkoperator.k8s.io/v1beta2", kind="SparkApplication")
        app = applications.get(name="wordcount", namespace=real.namespace)
        reference = {"apiVersion": app.apiVersion, "kind": app.kind, "name": app.metadata.name}
        owners = [{**reference, "uid": app.metadata.uid, "controller": True}]
        expected = {**reference, "uid": app.metadata.uid}
    body = {
        "metadata": {"name": DRIVER, "ownerReferences": owners},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "apache/spark:3.5.7"}]},
    }
    pod = k8s.CoreV1Api(real.admin).create_namespaced_pod(real.namespace, body)
    expected.setdefault("uid", pod.metadata.uid)
    return pod, {**expected, "namespace": real.namespace}


@pytest.mark.parametrize("owned", [pytest.param(True, id="spark-application"), pytest.param(False, id="bare-pod")])
def test_advisor_mode_recommends_in_one_counted_event_on_the_driver_pods_owner(
    apiserver: LocalApiServer, tmp_path: Path, owned: bool
) -> None:
    real = Real(apiserver, rbac_from=("spark-operator",))  # the driver ServiceAccount: Spark's Role and events
    pod, involved = driver_pod(real, owned)
    environ = {"DAEDALUS_POD_NAME": DRIVER, "DAEDALUS_POD_UID": pod.metadata.uid}
    environ |= {"DAEDALUS_NAMESPACE": real.namespace, "DAEDALUS_SPARK_APP_ID": "spark-0123"}
    sidecar = build_sidecar(sidecar_config(real, tmp_path), dry_run=True, environ=environ)
    assert isinstance(sidecar.actuator, DryRunActuator)  # advisor: nothing wrapped that could touch the job
    (events,) = [p for p in sidecar.loop.publishers if isinstance(p, EventPublisher)]

    events.publish(recommended(1200.0))
    events.publish(recommended(1350.0))  # the same recommendation a tick later, with the tick's numbers

    (event,) = real.events()
    assert event["involvedObject"] == involved
    assert (event["type"], event["reason"], event["count"]) == ("Normal", "RescaleRecommended", 2)
    assert event["message"].startswith("scale_out_smallest_valid: scale-out 2 -> 3 dry_run: dry run: would set 3")
    assert "workload_avg_per_s=1350.0" in event["message"]
