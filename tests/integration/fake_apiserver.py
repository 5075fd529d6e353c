"""A stand-in Kubernetes API server (stdlib http.server) for the few endpoints the actuator, watcher and events use.

It answers as the real one does where the client can tell: Status objects for errors, resourceVersion preconditions
(409 Conflict), 403/404/422/500, merge-patch content type required, and slow answers on request. Its pods go through
the faults the way Kubernetes records them (`evict`, the Eviction subresource, `lose_node`, `taint_evict`): phase,
status reason and message, deletionTimestamp, Ready and DisruptionTarget conditions.

The contract cases run against it and the real kube-apiserver alike (k8s_backends.py); it stays for what a real
server without controllers or kubelet does not give on demand: node faults, 5xx answers, slow answers.
"""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubernetes import client as k8s

SCALE = re.compile(r"^/apis/apps/v1/namespaces/([^/]+)/(statefulsets|deployments)/([^/]+)/scale$")
PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods$")
EVICTION = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction$")
EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events(?:/([^/]+))?$")
MAX_REPLICAS_POLICY = "max-replicas"  # the name of the admission policy the stand-in plays
REASONS = {403: "Forbidden", 404: "NotFound", 409: "Conflict", 422: "Invalid", 500: "InternalError"}


def status(code: int, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": REASONS.get(code, "Unknown"),
        "code": code,
    }


@dataclass
class Workload:
    replicas: int
    live: int
    uid: str
    resource_version: int = 1
    join_reads: int = 0  # reads of the scale before status.replicas follows spec.replicas
    _reads_left: int = 0


@dataclass
class FakeApiServer:
    max_replicas: int = 8  # a validating admission policy refuses more (422), like a quota would
    objects: dict[tuple[str, str, str], Workload] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    forbidden: set[tuple[str, str]] = field(default_factory=set)  # (method, resource kind) answered 403
    scripted: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # method → codes to answer
    conflicts_by_others: int = 0  # PATCHes that find someone else changed the object just before (409)
    delay_s: float = 0.0  # every answer waits this long (a slow API server)
    requests: list[tuple[str, str]] = field(default_factory=list)
    now_s: float = 1_800_000_000.0  # the cluster's clock: stamps conditions and deletions (tests set it)
    content_types: list[str] = field(default_factory=list)
    _release: threading.Event = field(default_factory=threading.Event)

    def start(self) -> FakeApiServer:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def api_client(self) -> k8s.ApiClient:
        configuration = k8s.Configuration(host=self.url)
        configuration.retries = 0
        return k8s.ApiClient(configuration)

    def stop(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def add(self, kind: str, namespace: str, name: str, replicas: int, **extra: int) -> Workload:
        workload = Workload(replicas, replicas, f"uid-{name}", **extra)
        self.objects[(kind, namespace, name)] = workload
        return workload

    # ------------------------------------------------------------ request handling (server threads)

    def answer(self, method: str, path: str, query: str, body: Any, content_type: str) -> tuple[int, Any]:
        self.requests.append((method, path))
        if self.delay_s:
            self._release.wait(self.delay_s)
        if self.scripted[method]:
            code = self.scripted[method].pop(0)
            return code, status(code, f"scripted {code}")
        if m := SCALE.match(path):
            return self._scale(method, m.groups(), body, content_type)
        if m := PODS.match(path):
            return self._pods(method, m.group(1), query)
        if (m := EVICTION.match(path)) and method == "POST":
            return self._evict_by_api(*m.groups())
        if m := EVENTS.match(path):
            return self._events(method, m.group(1), m.group(2), body, content_type)
        return 404, status(404, f"the server could not find the requested resource ({path})")

    def _scale(self, method: str, where: tuple[str, ...], body: Any, content_type: str) -> tuple[int, Any]:
        namespace, plural, name = where
        if (method, plural) in self.forbidden:
            verb = {"GET": "get", "PATCH": "patch"}[method]
            return 403, status(
                403, f'{plural}.apps "{name}" is forbidden: {_cannot(namespace, verb, plural + "/scale")}'
            )
        workload = self.objects.get((plural, namespace, name))
        if workload is None:
            return 404, status(404, f'{plural}.apps "{name}" not found')
        if method == "PATCH":
            return self._patch_scale(workload, plural, namespace, name, body, content_type)
        if workload.live != workload.replicas:
            if workload._reads_left <= 0:
                workload.live = workload.replicas
            workload._reads_left -= 1
        return 200, _scale_object(workload, plural, namespace, name)

    def _patch_scale(
        self, w: Workload, plural: str, namespace: str, name: str, body: Any, content_type: str
    ) -> tuple[int, Any]:
        self.content_types.append(content_type)
        if content_type != "application/merge-patch+json":
            return 415, status(415, f"unexpected patch type {content_type}")
        if self.conflicts_by_others > 0:
            self.conflicts_by_others -= 1
            w.resource_version += 1  # another writer got there first
        given = body.get("metadata", {}).get("resourceVersion")
        if given is not None and given != str(w.resource_version):
            return 409, status(
                409,
                f'Operation cannot be fulfilled on {plural}.apps "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )
        replicas = body["spec"]["replicas"]
        if not isinstance(replicas, int) or replicas < 0:  # the Scale's own validation
            return 422, status(
                422,
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas}: '
                "must be greater than or equal to 0",
            )
        if replicas > self.max_replicas:  # a validating admission policy: a 422 too, worded as a denial
            policy = f"ValidatingAdmissionPolicy '{MAX_REPLICAS_POLICY}' with binding '{MAX_REPLICAS_POLICY}'"
            return 422, status(
                422,
                f'{plural}.apps "{name}" is forbidden: {policy} denied request: at most {self.max_replicas} replicas',
            )
        if replicas != w.replicas:
            w.replicas, w.resource_version, w._reads_left = replicas, w.resource_version + 1, w.join_reads
            if w.join_reads == 0:
                w.live = replicas
        return 200, _scale_object(w, plural, namespace, name)

    def _pods(self, method: str, namespace: str, query: str) -> tuple[int, Any]:
        if (method, "pods") in self.forbidden:
            return 403, status(403, f"pods is forbidden: {_cannot(namespace, 'list', 'pods', '')}")
        wanted = dict(p.split("=", 1) for p in _query(query).get("labelSelector", "").split(",") if p)
        items = [
            p
            for p in self.pods
            if p["metadata"].get("namespace", namespace) == namespace
            and all(p["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())
        ]
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}

    def _events(self, method: str, namespace: str, name: str | None, body: Any, content_type: str) -> tuple[int, Any]:
        if (method, "events") in self.forbidden:
            verb = {"POST": "create", "PATCH": "patch"}.get(method, method.lower())
            return 403, status(403, f"events is forbidden: {_cannot(namespace, verb, 'events', '')}")
        if method == "POST":
            name = body["metadata"]["name"]
            if name in self.events:
                return 409, status(409, f'events "{name}" already exists')
            self.events[name] = body
            return 201, body
        if method == "PATCH" and name is not None:
            if name not in self.events:
                return 404, status(404, f'events "{name}" not found')
            self.events[name] = {**self.events[name], **body}
            return 200, self.events[name]
        return 405, status(405, "method not allowed")

    # ------------------------------------------------------------ pod faults, as Kubernetes records them

    def pod(self, name: str) -> dict[str, Any]:
        return next(p for p in self.pods if p["metadata"]["name"] == name)

    def evict(self, name: str, message: str = "The node was low on resource: memory.") -> None:
        """Node-pressure eviction by the kubelet: phase Failed, reason Evicted, the containers killed."""
        pod, at = self.pod(name), stamp(self.now_s)
        status = pod["status"]
        status.update(phase="Failed", reason="Evicted", message=message)
        for container in status.get("containerStatuses", []):
            container.update(ready=False, state={"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": at}})
        _condition(status, "Ready", "False", at, reason="PodFailed")
        _condition(status, "DisruptionTarget", "True", at, "TerminationByKubelet", message)

    def lose_node(self, node: str) -> list[str]:
        """The node controller stops hearing from `node`: its pods' Ready turns False, the kubelet's last report
        (containers running and ready) stays; the names of the pods marked."""
        marked = [p for p in self.pods if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"]
        for pod in marked:
            _condition(pod["status"], "Ready", "False", stamp(self.now_s))
        return [p["metadata"]["name"] for p in marked]

    def taint_evict(self, node: str, grace_s: int = 30) -> None:
        """tolerationSeconds of the unreachable taint ran out: the taint manager deletes the node's pods."""
        for pod in self.pods:
            if pod["spec"].get("nodeName") == node:
                message = "Taint manager: deleting due to NoExecute taint"
                self._mark_deleted(pod, "DeletionByTaintManager", message, grace_s)

    def remove(self, name: str) -> None:
        """The pod is gone from the API (deleted, or garbage-collected)."""
        self.pods.remove(self.pod(name))

    def _evict_by_api(self, namespace: str, name: str) -> tuple[int, Any]:
        if not any(p["metadata"]["name"] == name for p in self.pods):
            return 404, status(404, f'pods "{name}" not found')
        self._mark_deleted(self.pod(name), "EvictionByEvictionAPI", "Eviction API: evicting", 30)
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _mark_deleted(self, pod: dict[str, Any], reason: str, message: str, grace_s: int) -> None:
        at = stamp(self.now_s)
        pod["metadata"].update(deletionTimestamp=stamp(self.now_s + grace_s), deletionGracePeriodSeconds=grace_s)
        _condition(pod["status"], "DisruptionTarget", "True", at, reason, message)


def _cannot(namespace: str, verb: str, resource: str, group: str = "apps") -> str:
    """The RBAC authorizer's words for a refusal to the controller's ServiceAccount."""
    user = f"system:serviceaccount:{namespace}:daedalus"
    return f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}" in the namespace "{namespace}"'


def stamp(time_s: float) -> str:
    return datetime.fromtimestamp(time_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(status: dict[str, Any], kind: str, value: str, at: str, reason: str = "", message: str = "") -> None:
    conditions = [c for c in status.setdefault("conditions", []) if c["type"] != kind]
    condition = {"type": kind, "status": value, "lastTransitionTime": at}
    condition.update({k: v for k, v in (("reason", reason), ("message", message)) if v})
    status["conditions"] = [*conditions, condition]


def executor_pod(
    executor_id: str,
    *,
    created_s: float,
    running: bool = True,
    node: str = "node-1",
    app: str = "spark-app-1",
    namespace: str = "jobs",
    unschedulable: bool = False,
) -> dict[str, Any]:
    """An executor pod as Spark on Kubernetes creates it, Running and Ready (or Pending, not yet scheduled; with
    `unschedulable`, because the scheduler found no node for it)."""
    created = stamp(created_s)
    status: dict[str, Any] = {"phase": "Running" if running else "Pending"}
    if unschedulable:
        message = "0/3 nodes are available: 3 Insufficient cpu."
        _condition(status, "PodScheduled", "False", created, "Unschedulable", message)
    if running:
        status["containerStatuses"] = [
            {
                "name": "spark-kubernetes-executor",
                "image": "job",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": created}},
            }
        ]
        _condition(status, "Ready", "True", created)
    return {
        "metadata": {
            "name": f"wordcount-exec-{executor_id}",
            "namespace": namespace,
            "creationTimestamp": created,
            "labels": {"spark-role": "executor", "spark-app-selector": app, "spark-exec-id": executor_id},
        },
        "spec": {
            **({"nodeName": node} if running else {}),  # a Pending pod is not bound to a node yet
            "containers": [{"name": "spark-kubernetes-executor", "image": "job"}],
        },
        "status": status,
    }


def _query(query: str) -> dict[str, str]:
    from urllib.parse import parse_qs

    return {k: v[0] for k, v in parse_qs(query).items()}


def _scale_object(w: Workload, plural: str, namespace: str, name: str) -> dict[str, Any]:
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": name, "namespace": namespace, "uid": w.uid, "resourceVersion": str(w.resource_version)},
        "spec": {"replicas": w.replicas},
        "status": {"replicas": w.live, "selector": f"app={name}"},
    }


def _handler(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

        def _serve(self) -> None:
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            code, payload = api.answer(self.command, path, query, body, self.headers.get("Content-Type", ""))
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client timed out and left

        do_GET = do_PATCH = do_POST = _serve  # noqa: N815

    return Handler
