"""The Kubernetes scale actuator keeps the Execute contract, with the real kubernetes client over HTTP: against the
stand-in API server and against the real kube-apiserver as the controller's ServiceAccount."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator
from daedalus_spark.httpserve import free_port
from daedalus_spark.kubecluster.apiserver import LocalApiServer
from tests.contract.actuator_contract import CONTRACT
from tests.integration.fake_apiserver import FakeApiServer
from tests.integration.k8s_backends import MAX_REPLICAS, Real
from tests.integration.k8s_helpers import NAMESPACE, FakeTime, scale_actuator

PLURALS = {"StatefulSet": "statefulsets", "Deployment": "deployments"}


class KubernetesHarness:
    """The fake API server holding one worker StatefulSet/Deployment; 422 above max_target (admission policy)."""

    changes_the_job = True
    max_target = 8

    def __init__(self, kind: str) -> None:
        self.api = FakeApiServer(max_replicas=self.max_target).start()
        self.workload = self.api.add(PLURALS[kind], NAMESPACE, "spark-worker", 2)
        self.time = FakeTime()
        self._actuator = scale_actuator(self.api, self.time, kind)

    def actuator(self) -> KubernetesScaleActuator:
        return self._actuator

    def live(self) -> int:
        return self.workload.live

    def break_connection(self) -> None:
        self.api.stop()
        self.stopped = True

    def stop(self) -> None:
        if not getattr(self, "stopped", False):
            self.api.stop()


class RealKubernetesHarness:
    """A namespace of the real API server with the standalone overlay and its Roles; 422 above max_target (a
    ValidatingAdmissionPolicy). No controller or kubelet runs: `live()` plays the StatefulSet or Deployment
    controller, copying `spec.replicas` into `status.replicas` (as admin) whenever it is looked at."""

    changes_the_job = True
    max_target = MAX_REPLICAS

    def __init__(self, server: LocalApiServer, kind: str) -> None:
        self.real = Real(server)
        self.kind = kind
        if kind == "Deployment":  # the overlay's worker StatefulSet is there already
            self.real.add("Deployment", "spark-worker", 2)
        self._sync()
        self._actuator = self.real.actuator(FakeTime(), kind=kind)
        self._actuator.apps = _Synced(self.real.controller, self._sync)

    def _sync(self) -> None:
        """The workload controller's part: the pods asked for are the pods running (no kubelet here)."""
        apps = k8s.AppsV1Api(self.real.admin)
        read, write = (
            (apps.read_namespaced_stateful_set, apps.patch_namespaced_stateful_set_status)
            if self.kind == "StatefulSet"
            else (apps.read_namespaced_deployment, apps.patch_namespaced_deployment_status)
        )
        replicas = read("spark-worker", self.real.namespace).spec.replicas
        status = {"status": {"replicas": replicas}}
        write("spark-worker", self.real.namespace, status, _content_type="application/merge-patch+json")

    def actuator(self) -> KubernetesScaleActuator:
        return self._actuator

    def live(self) -> int:
        self._sync()
        return self.real.replicas(self.kind, "spark-worker")

    def break_connection(self) -> None:
        self._actuator.apps.api_client.configuration.host = f"https://127.0.0.1:{free_port()}"  # nothing listens

    def stop(self) -> None:
        return None


class _Synced(k8s.AppsV1Api):  # type: ignore[misc]
    """The controller's AppsV1Api; the workload controller catches up before each read of the scale."""

    def __init__(self, api_client: k8s.ApiClient, sync: Callable[[], None]) -> None:
        super().__init__(api_client)
        self._sync = sync

    def read_namespaced_stateful_set_scale(self, *args: Any, **kwargs: Any) -> Any:
        self._sync()
        return super().read_namespaced_stateful_set_scale(*args, **kwargs)

    def read_namespaced_deployment_scale(self, *args: Any, **kwargs: Any) -> Any:
        self._sync()
        return super().read_namespaced_deployment_scale(*args, **kwargs)


@pytest.mark.parametrize("server", ["stand-in", pytest.param("real", marks=pytest.mark.apiserver)])
@pytest.mark.parametrize("kind", sorted(PLURALS))
@pytest.mark.parametrize("check", CONTRACT, ids=lambda c: c.__name__.removeprefix("check_"))
def test_kubernetes_actuator_contract(kind, check, server, request):
    if server == "real":
        harness: Any = RealKubernetesHarness(request.getfixturevalue("max_replicas_policy"), kind)
    else:
        harness = KubernetesHarness(kind)
    try:
        check(harness)
    finally:
        harness.stop()
