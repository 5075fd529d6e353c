"""Shared pieces of the Kubernetes tests: a fake time, and actuators wired to the fake API server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from daedalus_spark.config import KubernetesConfig
from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator
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
