"""The Kubernetes scale actuator keeps the Execute contract, with the real kubernetes client over HTTP."""

from __future__ import annotations

import pytest

from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator
from tests.contract.actuator_contract import CONTRACT
from tests.integration.fake_apiserver import FakeApiServer
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


@pytest.mark.parametrize("kind", sorted(PLURALS))
@pytest.mark.parametrize("check", CONTRACT, ids=lambda c: c.__name__.removeprefix("check_"))
def test_kubernetes_actuator_contract(kind, check):
    harness = KubernetesHarness(kind)
    try:
        check(harness)
    finally:
        harness.stop()
