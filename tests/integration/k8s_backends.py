"""The two API servers the Kubernetes contract tests run against: the stand-in (fake_apiserver.py) and the real
kube-apiserver, with the same few operations (an object to scale, a verb taken away, another writer, pods)."""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from daedalus_spark.config import KubernetesConfig
from daedalus_spark.execute.kubernetes_pods import ExecutorPodWatcher
from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator
from daedalus_spark.kubecluster.apiserver import LocalApiServer
from daedalus_spark.runtime.kubernetes_events import EventPublisher, ObjectRef
from daedalus_spark.waiting import wait_until
from tests.integration.fake_apiserver import FakeApiServer
from tests.integration.k8s_helpers import FakeTime
from tests.integration.kustomize import rendered

CONTROLLER_SA = "daedalus"  # the overlays' ServiceAccount
PLURALS = {"StatefulSet": "statefulsets", "Deployment": "deployments"}
FAKE_METHODS = {"get": "GET", "list": "GET", "patch": "PATCH", "create": "POST"}
MAX_REPLICAS = 8  # a validating admission policy (real) or the stand-in's check refuses more
_namespaces = itertools.count(1)


def scale_settings(kind: str, name: str, **settings: Any) -> KubernetesConfig:
    defaults: dict[str, Any] = {"request_timeout_s": 5.0, "retries": 3, "backoff_s": 0.5}
    return KubernetesConfig(**{**defaults, "kind": kind, "name": name, **settings})


def watcher_settings() -> KubernetesConfig:
    return KubernetesConfig(pending_timeout_s=120, request_timeout_s=5.0)


@dataclass
class StandIn:
    """The stand-in API server, answering the controller (it has no identities: `forbid` scripts the 403s)."""

    api: FakeApiServer
    namespace: str = "jobs"
    name = "stand-in"

    def actuator(self, clock: FakeTime, kind: str = "StatefulSet", name: str = "spark-worker") -> Any:
        apps = k8s.AppsV1Api(self.api.api_client())
        return KubernetesScaleActuator(apps, self.namespace, scale_settings(kind, name), clock.sleep, clock.now)

    def add(self, kind: str, name: str, replicas: int) -> None:
        self.api.add(PLURALS[kind], self.namespace, name, replicas)

    def replicas(self, kind: str, name: str) -> int:
        return self.api.objects[(PLURALS[kind], self.namespace, name)].replicas

    def version(self, kind: str, name: str) -> str:
        return str(self.api.objects[(PLURALS[kind], self.namespace, name)].resource_version)

    def remove(self, kind: str, name: str) -> None:
        del self.api.objects[(PLURALS[kind], self.namespace, name)]

    def others_write(self, times: int) -> None:
        self.api.conflicts_by_others = times

    def forbid(self, verb: str, resource: str) -> None:
        self.api.forbidden.add((FAKE_METHODS[verb], resource.split("/")[0]))

    def publisher(self, clock: FakeTime, ref: ObjectRef) -> EventPublisher:
        return EventPublisher(k8s.CoreV1Api(self.api.api_client()), ref, clock.now, 5.0, instance="controller-0")

    def events(self) -> list[dict[str, Any]]:
        return list(self.api.events.values())

    def add_pod(self, pod: dict[str, Any]) -> float:
        self.api.pods.append(pod)
        return _epoch(pod["metadata"]["creationTimestamp"])

    def evict(self, pod: str) -> None:
        """A drain: the Eviction API, called (as kubectl drain does) by the cluster's admin."""
        k8s.CoreV1Api(self.api.api_client()).create_namespaced_pod_eviction(pod, self.namespace, _eviction(pod))

    def watcher(self, clock: FakeTime, app_id: str) -> ExecutorPodWatcher:
        core = k8s.CoreV1Api(self.api.api_client())
        return ExecutorPodWatcher(core, self.namespace, watcher_settings(), app_id, clock=clock.now, sleep=clock.sleep)


class _InterferingApps(k8s.AppsV1Api):  # type: ignore[misc]
    """The controller's AppsV1Api; after each read of a scale, `after_read` may let another writer in."""

    def __init__(self, api_client: k8s.ApiClient, after_read: Callable[[str], None]) -> None:
        super().__init__(api_client)
        self._after_read = after_read

    def read_namespaced_stateful_set_scale(self, name: str, *args: Any, **kwargs: Any) -> Any:
        scale = super().read_namespaced_stateful_set_scale(name, *args, **kwargs)
        self._after_read(name)
        return scale


@dataclass
class Real:
    """A namespace of the real API server with the standalone overlay applied (its Roles bound to the controller's
    ServiceAccount) plus the driver sidecar's Role; the controller acts with a token the server issued for it."""

    server: LocalApiServer
    rbac_from: tuple[str, ...] = ("standalone", "spark-operator")  # the overlays whose Roles are bound
    namespace: str = field(default_factory=lambda: f"contract-{next(_namespaces)}")
    conflicts: int = 0
    name = "real"

    def __post_init__(self) -> None:
        self.admin = self.server.api_client()
        self.dynamic = DynamicClient(self.admin)
        core = k8s.CoreV1Api(self.admin)
        core.create_namespace({"metadata": {"name": self.namespace}})
        core.create_namespaced_service_account(self.namespace, {"metadata": {"name": "default"}})  # no controller
        rbac = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
        docs = [d for d in rendered("standalone") if d["kind"] not in rbac]  # the workloads: they grant nothing
        docs += [d for overlay in self.rbac_from for d in rendered(overlay) if d["kind"] in rbac]
        docs = list({(d["kind"], d["metadata"]["name"]): d for d in docs}.values())  # base's Role is in each
        self.roles = {d["metadata"]["name"]: self.moved(d) for d in docs if d["kind"] == "Role"}
        for doc in docs:
            self.apply(self.moved(doc))
        self.controller = self.server.service_account_client(self.namespace, CONTROLLER_SA, create=False)

    def moved(self, doc: dict[str, Any]) -> dict[str, Any]:
        """`doc` in this test's namespace (kustomize set the overlay's)."""
        doc = copy.deepcopy(doc)
        doc["metadata"]["namespace"] = self.namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = self.namespace
        return doc

    def apply(self, doc: dict[str, Any]) -> None:
        resource = self.dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        namespace = self.namespace if resource.namespaced else None
        self.dynamic.server_side_apply(
            resource, body=doc, namespace=namespace, field_manager="tests", force_conflicts=True
        )

    def actuator(self, clock: FakeTime, kind: str = "StatefulSet", name: str = "spark-worker") -> Any:
        apps = _InterferingApps(self.controller, self._another_writer)
        return KubernetesScaleActuator(apps, self.namespace, scale_settings(kind, name), clock.sleep, clock.now)

    def _another_writer(self, name: str) -> None:
        if self.conflicts > 0:
            self.conflicts -= 1
            note = {"metadata": {"annotations": {"tests/other-writer": str(time.monotonic())}}}
            k8s.AppsV1Api(self.admin).patch_namespaced_stateful_set(
                name, self.namespace, note, _content_type="application/merge-patch+json"
            )

    def add(self, kind: str, name: str, replicas: int) -> None:
        labels = {"app.kubernetes.io/name": name}
        pod = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
        spec = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": pod}
        body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}
        self.apply(body)
        if kind == "Deployment":  # the overlays scale a StatefulSet; a Deployment needs its own subresource's rule
            rule = {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": [name]}
            role = copy.deepcopy(self.roles["daedalus-scale"])
            role["rules"].append({**rule, "verbs": ["get", "patch"]})
            self.set_role(role)

    def _workload(self, kind: str, name: str) -> Any:
        resource = self.dynamic.resources.get(api_version="apps/v1", kind=kind)
        return resource.get(name=name, namespace=self.namespace)

    def replicas(self, kind: str, name: str) -> int:
        return int(self._workload(kind, name).spec.replicas)

    def version(self, kind: str, name: str) -> str:
        return str(self._workload(kind, name).metadata.resourceVersion)

    def remove(self, kind: str, name: str) -> None:
        resource = self.dynamic.resources.get(api_version="apps/v1", kind=kind)
        resource.delete(name=name, namespace=self.namespace)

    def others_write(self, times: int) -> None:
        self.conflicts = times

    def set_role(self, role: dict[str, Any]) -> None:
        self.roles[role["metadata"]["name"]] = role
        self.apply(role)

    def forbid(self, verb: str, resource: str) -> None:
        """Take `verb` on `resource` out of every Role, and wait until the authorizer says no."""
        for role in list(self.roles.values()):
            changed = copy.deepcopy(role)
            for rule in changed["rules"]:
                if resource in rule["resources"] and verb in rule["verbs"]:
                    rule["verbs"] = [v for v in rule["verbs"] if v != verb]
            changed["rules"] = [r for r in changed["rules"] if r["verbs"]]
            if changed != role:
                self.set_role(changed)
        name = "spark-worker" if resource.endswith("/scale") else ""
        wait_until(
            lambda: not self.may(verb, resource, name=name),
            f"RBAC to deny {verb} {resource} to the controller",
            30.0,
        )

    def may(self, verb: str, resource: str, *, name: str = "") -> bool:
        """What the authorizer answers the controller (SelfSubjectAccessReview, asked with its own token)."""
        plural, _, sub = resource.partition("/")
        group = "apps" if plural in ("statefulsets", "deployments") else ""
        attributes = {"namespace": self.namespace, "verb": verb, "group": group, "resource": plural}
        attributes |= {"subresource": sub, "name": name} if sub else {}
        review = {"spec": {"resourceAttributes": attributes}}
        answer = k8s.AuthorizationV1Api(self.controller).create_self_subject_access_review(review)
        return bool(answer.status.allowed)

    def publisher(self, clock: FakeTime, ref: ObjectRef) -> EventPublisher:
        return EventPublisher(k8s.CoreV1Api(self.controller), ref, clock.now, 5.0, instance="controller-0")

    def events(self) -> list[dict[str, Any]]:
        resource = self.dynamic.resources.get(api_version="v1", kind="Event")
        return [dict(item) for item in resource.get(namespace=self.namespace).to_dict()["items"]]

    def add_pod(self, pod: dict[str, Any]) -> float:
        """Create `pod` (as Spark's driver would) and write its status (as the scheduler and kubelet would);
        returns its creation time, which the server sets."""
        body = copy.deepcopy(pod)
        status = body.pop("status")
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in ("creationTimestamp", "namespace")}
        core = k8s.CoreV1Api(self.admin)
        if "nodeName" in body["spec"]:
            node = body["spec"]["nodeName"]
            self.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
        created = core.create_namespaced_pod(self.namespace, body)
        core.patch_namespaced_pod_status(
            body["metadata"]["name"], self.namespace, {"status": status}, _content_type="application/merge-patch+json"
        )
        return float(created.metadata.creation_timestamp.timestamp())

    def evict(self, pod: str) -> None:
        k8s.CoreV1Api(self.admin).create_namespaced_pod_eviction(pod, self.namespace, _eviction(pod))

    def watcher(self, clock: FakeTime, app_id: str) -> ExecutorPodWatcher:
        core = k8s.CoreV1Api(self.controller)
        return ExecutorPodWatcher(core, self.namespace, watcher_settings(), app_id, clock=clock.now, sleep=clock.sleep)


def _eviction(pod: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}}


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


MAX_REPLICAS_POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "max-replicas"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["statefulsets/scale", "deployments/scale"],
                }
            ]
        },
        "validations": [
            {"expression": f"object.spec.replicas <= {MAX_REPLICAS}", "message": f"at most {MAX_REPLICAS} replicas"}
        ],
    },
}
MAX_REPLICAS_BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "max-replicas"},
    "spec": {"policyName": "max-replicas", "validationActions": ["Deny"]},
}


def install_max_replicas_policy(server: LocalApiServer) -> None:
    """Create the policy and its binding, and wait until a dry-run scale past the limit is refused."""
    api = DynamicClient(server.api_client())
    for doc in (MAX_REPLICAS_POLICY, MAX_REPLICAS_BINDING):
        resource = api.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        api.server_side_apply(resource, body=doc, field_manager="tests", force_conflicts=True)
    probe = Real(server, rbac_from=())
    wait_until(lambda: _refused(probe), "the admission policy to refuse replicas over the maximum", 60.0)


def _refused(probe: Real) -> bool:
    try:
        k8s.AppsV1Api(probe.admin).patch_namespaced_stateful_set_scale(
            "spark-worker",
            probe.namespace,
            {"spec": {"replicas": MAX_REPLICAS + 1}},
            dry_run="All",
            _content_type="application/merge-patch+json",
        )
    except ApiException as exc:
        return exc.status == 422
    return False
