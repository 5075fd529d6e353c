"""Execute: the Kubernetes scale actuator — set a StatefulSet's or Deployment's `spec.replicas` (the loop confirms)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from daedalus_spark.config import Config, KubernetesConfig
from daedalus_spark.execute.kubernetes_client import (
    API_ERRORS,
    api_call,
    api_error_kind,
    explain_exception,
    load_api_client,
)
from daedalus_spark.execute.port import Actuation, ActuatorError, Outcome

MERGE_PATCH = "application/merge-patch+json"  # the client would pick json-patch for a dict body otherwise


@dataclass
class KubernetesScaleActuator:
    """Sets `spec.replicas` of a StatefulSet's or Deployment's scale subresource (absolute, optimistic concurrency);
    `current()` is `status.replicas`, which the loop reads on its next ticks to confirm the target."""

    apps: k8s.AppsV1Api
    namespace: str
    settings: KubernetesConfig
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic  # times the request, for the decision log

    @property
    def resource(self) -> str:
        return "statefulsets/scale" if self.settings.kind == "StatefulSet" else "deployments/scale"

    def current(self) -> int:
        try:
            scale = api_call(self._read, self.settings, self.sleep)
        except API_ERRORS as exc:
            raise ActuatorError(self._explain(exc, "get")) from None
        return int(scale.status.replicas or 0) if scale.status else 0

    def apply(self, target: int) -> Actuation:
        started = self.monotonic()
        try:
            live = api_call(lambda: self._set(target), self.settings, self.sleep)
        except API_ERRORS as exc:
            refused = isinstance(exc, ApiException) and api_error_kind(exc.status) == "refuse"
            outcome = Outcome.REFUSED if refused else Outcome.FAILED
            return Actuation(target, outcome, self._explain(exc, "patch"), duration_s=self.monotonic() - started)
        detail = f"{self.resource} {self.namespace}/{self.settings.name}: replicas set to {target}, {live} running"
        return Actuation(target, Outcome.ACCEPTED, detail, live, self.monotonic() - started)

    def object_uid(self) -> str:
        """The scaled object's uid (a Scale carries its owner's), for the events; empty when it cannot be read."""
        try:
            return str(self._read().metadata.uid or "")
        except API_ERRORS:
            return ""

    def _set(self, target: int) -> int:
        """Write the target; the replicas running when it was read."""
        scale = self._read()  # fresh on every attempt: a 409 means someone else changed it meanwhile
        live = int(scale.status.replicas or 0) if scale.status else 0
        if scale.spec and scale.spec.replicas == target:
            return live  # idempotent: no write when the target is already set
        body = {"metadata": {"resourceVersion": scale.metadata.resource_version}, "spec": {"replicas": target}}
        patch = (
            self.apps.patch_namespaced_stateful_set_scale
            if self.settings.kind == "StatefulSet"
            else self.apps.patch_namespaced_deployment_scale
        )
        patch(
            self.settings.name,
            self.namespace,
            body,
            _content_type=MERGE_PATCH,
            _request_timeout=self.settings.request_timeout_s,
        )
        return live

    def _read(self) -> Any:
        read = (
            self.apps.read_namespaced_stateful_set_scale
            if self.settings.kind == "StatefulSet"
            else self.apps.read_namespaced_deployment_scale
        )
        return read(self.settings.name, self.namespace, _request_timeout=self.settings.request_timeout_s)

    def _explain(self, exc: Exception, verb: str) -> str:
        return explain_exception(
            exc, verb=verb, resource=self.resource, namespace=self.namespace, name=self.settings.name
        )


def make_kubernetes_actuator(config: Config, environ: Mapping[str, str] | None = None) -> KubernetesScaleActuator:
    """actuator.kind kubernetes: the scale actuator for kubernetes.kind/name."""
    api_client, namespace = load_api_client(config.kubernetes, os.environ if environ is None else environ)
    return KubernetesScaleActuator(k8s.AppsV1Api(api_client), namespace, config.kubernetes)
