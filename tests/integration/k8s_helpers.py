"""Shared pieces of the Kubernetes tests: a fake time, actuators wired to the fake API server, a step's result, RBAC
grants."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from daedalus_spark.config import KubernetesConfig
from daedalus_spark.domain import Decision, Reason
from daedalus_spark.evidence import Evidence
from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.kubecluster.apiserver import LocalApiServer
from daedalus_spark.loop import StepResult
from tests.conftest import FakeTime as SharedFakeTime
from tests.integration.fake_apiserver import FakeApiServer

NAMESPACE = "jobs"


@dataclass
class FakeTime(SharedFakeTime):
    t: float = 1_800_000_000.0  # an epoch time: Events and pod ages are stamped with it


def scale_actuator(
    api: FakeApiServer, time: FakeTime, kind: str = "StatefulSet", **settings: Any
) -> KubernetesScaleActuator:
    defaults: dict[str, Any] = {
        "name": "spark-worker",
        "kind": kind,
        "request_timeout_s": 0.5,
        "retries": 3,
        "backoff_s": 0.5,
    }
    return KubernetesScaleActuator(
        k8s.AppsV1Api(api.api_client()),
        NAMESPACE,
        KubernetesConfig(**{**defaults, **settings}),
        sleep=time.sleep,
        monotonic=time.now,
    )


EVIDENCE = {
    "workload_avg_per_s": 1200.5,
    "capacity_current_per_s": 1000.0,
    "capacity_target_per_s": 1500.0,
    "predicted_recovery_s": 240.0,
    "forecast_model": "arima",
}


def step(
    outcome: Outcome | None, *, current=2, target=3, reason=Reason.SCALE_OUT_SMALLEST_VALID, detail=""
) -> StepResult:
    actuation = None if outcome is None else Actuation(target, outcome, detail)
    decision = Decision(0.0, current, target, reason, Evidence.from_fields(EVIDENCE), actuation=actuation)
    return StepResult(0.0, decision, None, None)


Grant = tuple[str, str, str, str]  # (API group, resource, resource name or '*', verb)


def grants(rules: list[Any]) -> set[Grant]:
    """Rules (Role rules, or a rules review's resourceRules) as single grants."""
    out = set()
    for rule in rules:
        if not isinstance(rule, dict):  # the client's model of a review's rule
            model = rule
            rule = {"apiGroups": model.api_groups, "resources": model.resources, "resourceNames": model.resource_names}
            rule["verbs"] = model.verbs
        names = rule.get("resourceNames") or ["*"]
        for group in rule.get("apiGroups") or [""]:
            for resource in rule["resources"]:
                out |= {(group, resource, name, verb) for name in names for verb in rule["verbs"]}
    return out


def kubeconfig(path: Path, server: LocalApiServer, token: str, namespace: str) -> Path:
    """What `kubectl config` would write for the controller's ServiceAccount token."""
    cluster = {"server": server.url, "certificate-authority": str(server.ca_file)}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": cluster}],
                "users": [{"name": "controller", "user": {"token": token}}],
                "contexts": [
                    {"name": "c", "context": {"cluster": "local", "user": "controller", "namespace": namespace}}
                ],
                "current-context": "c",
            }
        )
    )
    return path
