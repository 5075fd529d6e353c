"""Execute: Kubernetes — set a StatefulSet's or Deployment's scale, and watch executor pods for targets out of reach."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from daedalus_spark.config import ActuatorConfig, Config, KubernetesConfig
from daedalus_spark.execute.port import Actuation, Actuator, ActuatorError, Outcome, confirm_target

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
MERGE_PATCH = "application/merge-patch+json"  # the client would pick json-patch for a dict body otherwise
T = TypeVar("T")


class KubernetesSetupError(ValueError):
    """Neither the in-cluster service account nor a kubeconfig could be loaded."""


# ---------------------------------------------------------------- pure: errors, pods


def api_error_kind(status: int | None) -> str:
    """'retry' (conflict, throttled, server error, no answer), 'refuse' (the API said no), or 'fail'."""
    if status is None or status in (409, 429) or status >= 500:
        return "retry"
    return "refuse" if 400 <= status < 500 else "fail"


def explain_api_error(
    status: int | None, *, verb: str, resource: str, namespace: str, name: str, message: str = ""
) -> str:
    """One line naming the object and, for 403, the RBAC rule the service account lacks."""
    where = f"{resource} {namespace}/{name}"
    if status == 403:
        return (
            f"forbidden: may not {verb} {where} — grant the service account the RBAC verb '{verb}' on "
            f"'{resource}' (resourceNames: [{name}]) in namespace {namespace}" + (f" ({message})" if message else "")
        )
    if status == 404:
        return f"{where} not found (does it exist in namespace {namespace}?)" + (f": {message}" if message else "")
    if status is None:
        return f"cannot {verb} {where}: no answer from the API server" + (f" ({message})" if message else "")
    return f"cannot {verb} {where}: HTTP {status}" + (f": {message}" if message else "")


@dataclass(frozen=True)
class ExecutorPod:
    """What the watcher needs of one executor pod."""

    executor_id: str
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    created_s: float
    ever_ran: bool  # a container of it started at some point
    why_pending: str = ""  # the scheduler's or kubelet's reason (Unschedulable: 0/3 nodes ..., ImagePullBackOff)


@dataclass(frozen=True)
class PodReport:
    running: int
    stuck: tuple[ExecutorPod, ...]  # Pending longer than the timeout
    never_ran: frozenset[str]  # executor ids of pods no container of which ever started

    def unreachable_detail(self, pending_timeout_s: float) -> str:
        if not self.stuck:
            return ""
        reasons = sorted({p.why_pending for p in self.stuck if p.why_pending})
        ids = ", ".join(p.executor_id for p in self.stuck[:5]) + (" ..." if len(self.stuck) > 5 else "")
        why = f": {'; '.join(reasons)}" if reasons else ""
        return (
            f"target unreachable: {len(self.stuck)} executor pod(s) Pending longer than {pending_timeout_s:g} s "
            f"(executors {ids}){why}"
        )


def classify_executor_pods(pods: Iterable[ExecutorPod], *, now_s: float, pending_timeout_s: float) -> PodReport:
    pods = list(pods)
    stuck = tuple(
        sorted(
            (p for p in pods if p.phase == "Pending" and now_s - p.created_s > pending_timeout_s),
            key=lambda p: p.created_s,
        )
    )
    return PodReport(
        running=sum(p.phase == "Running" for p in pods),
        stuck=stuck,
        never_ran=frozenset(p.executor_id for p in pods if not p.ever_ran),
    )


def executor_pod(pod: Any) -> ExecutorPod:
    """Adapter from the client's V1Pod."""
    meta, status = pod.metadata, pod.status
    labels = meta.labels or {}
    statuses = list(status.container_statuses or []) if status else []
    ran = any(
        (s.state and (s.state.running or s.state.terminated)) or (s.last_state and s.last_state.terminated)
        for s in statuses
    )
    phase = (status.phase if status else None) or "Unknown"
    created = meta.creation_timestamp.timestamp() if meta.creation_timestamp else 0.0
    return ExecutorPod(
        labels.get("spark-exec-id", meta.name),
        phase,
        created,
        ran or phase == "Running",
        _why_pending(status, statuses) if phase == "Pending" else "",
    )


def _why_pending(status: Any, statuses: list[Any]) -> str:
    for condition in (status.conditions or []) if status else []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return f"{condition.reason or 'Unschedulable'}: {condition.message or ''}".strip(": ")
    for s in statuses:
        if s.state and s.state.waiting and s.state.waiting.reason:
            return str(s.state.waiting.reason)
    return ""


# ---------------------------------------------------------------- client setup


def load_api_client(settings: KubernetesConfig, environ: Mapping[str, str]) -> tuple[k8s.ApiClient, str]:
    """The client (in-cluster service account or kubeconfig, as configured) and the namespace to work in."""
    in_cluster = settings.in_cluster
    if in_cluster == "auto":
        in_cluster = "KUBERNETES_SERVICE_HOST" in environ
    configuration = k8s.Configuration()
    try:
        if in_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)
            namespace = settings.namespace or _service_account_namespace()
        else:
            path = settings.kubeconfig or None
            k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
            _, context = k8s_config.list_kube_config_contexts(config_file=path)
            namespace = settings.namespace or context.get("context", {}).get("namespace") or "default"
    except (k8s_config.ConfigException, OSError, TypeError) as exc:
        how = "in-cluster service account" if in_cluster else f"kubeconfig {settings.kubeconfig or '(default)'}"
        raise KubernetesSetupError(
            f"kubernetes.in_cluster={settings.in_cluster}: cannot load the {how}: {exc}"
        ) from None
    configuration.retries = 0  # retries are ours (bounded, with backoff, a fresh read after a conflict)
    return k8s.ApiClient(configuration), namespace


def _service_account_namespace() -> str:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


@dataclass(frozen=True)
class Retrying:
    """Bounded attempts with doubling backoff for the transient answers (409, 429, 5xx, timeouts)."""

    attempts: int
    backoff_s: float
    sleep: Callable[[float], None] = time.sleep

    def call(self, action: Callable[[], T]) -> T:
        wait_s = self.backoff_s
        for attempt in range(1, self.attempts + 1):
            try:
                return action()
            except ApiException as exc:
                if api_error_kind(exc.status) != "retry" or attempt == self.attempts:
                    raise
                log.debug("API answered %s, attempt %d of %d", exc.status, attempt, self.attempts)
            except (urllib3.exceptions.HTTPError, OSError):
                if attempt == self.attempts:
                    raise
            self.sleep(wait_s)
            wait_s *= 2
        raise AssertionError("unreachable")


def _status_message(exc: ApiException) -> str:
    """The Status object's message, else the HTTP reason."""
    try:
        status = json.loads(exc.body or "{}")
    except ValueError:
        status = {}
    return str(status.get("message") or exc.reason or "") if isinstance(status, dict) else str(exc.reason or "")


# ---------------------------------------------------------------- the scale actuator


@dataclass
class KubernetesScaleActuator:
    """Sets `spec.replicas` of a StatefulSet's or Deployment's scale subresource (absolute, optimistic concurrency)."""

    apps: k8s.AppsV1Api
    namespace: str
    settings: KubernetesConfig
    confirm: ActuatorConfig  # confirm_timeout_s, confirm_poll_s
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic

    @property
    def resource(self) -> str:
        return "statefulsets/scale" if self.settings.kind == "StatefulSet" else "deployments/scale"

    def current(self) -> int:
        try:
            scale = self._retrying().call(self._read)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise ActuatorError(self._explain(exc, "get")) from None
        return int(scale.status.replicas or 0) if scale.status else 0

    def apply(self, target: int) -> Actuation:
        started = self.monotonic()
        try:
            self._retrying().call(lambda: self._set(target))
        except ApiException as exc:
            outcome = Outcome.REFUSED if api_error_kind(exc.status) == "refuse" else Outcome.FAILED
            return Actuation(target, outcome, self._explain(exc, "patch"), duration_s=self.monotonic() - started)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            return Actuation(target, Outcome.FAILED, self._explain(exc, "patch"), duration_s=self.monotonic() - started)
        where = self._where()  # then poll `status.replicas` until the pods exist
        return confirm_target(
            target,
            self._poll_replicas,
            started=started,
            settings=self.confirm,
            sleep=self.sleep,
            monotonic=self.monotonic,
            applied=f"{where}: {{live}} replicas after {{elapsed:.1f}} s",
            unconfirmed=f"{where}: replicas set to {{target}}, {{live}} after {{elapsed:.1f}} s",
        )

    def object_uid(self) -> str:
        """The scaled object's uid (a Scale carries its owner's), for the events; empty when it cannot be read."""
        try:
            return str(self._read().metadata.uid or "")
        except (ApiException, urllib3.exceptions.HTTPError, OSError):
            return ""

    def _set(self, target: int) -> None:
        scale = self._read()  # fresh on every attempt: a 409 means someone else changed it meanwhile
        if scale.spec and scale.spec.replicas == target:
            return  # idempotent: no write when the target is already set
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

    def _read(self) -> Any:
        read = (
            self.apps.read_namespaced_stateful_set_scale
            if self.settings.kind == "StatefulSet"
            else self.apps.read_namespaced_deployment_scale
        )
        return read(self.settings.name, self.namespace, _request_timeout=self.settings.request_timeout_s)

    def _poll_replicas(self) -> int | None:
        try:
            return self.current()
        except ActuatorError:
            return None

    def _retrying(self) -> Retrying:
        return Retrying(self.settings.retries, self.settings.backoff_s, self.sleep)

    def _where(self) -> str:
        return f"{self.resource} {self.namespace}/{self.settings.name}"

    def _explain(self, exc: Exception, verb: str) -> str:
        status = exc.status if isinstance(exc, ApiException) else None
        message = _status_message(exc) if isinstance(exc, ApiException) else type(exc).__name__
        return explain_api_error(
            status,
            verb=verb,
            resource=self.resource,
            namespace=self.namespace,
            name=self.settings.name,
            message=message,
        )


# ---------------------------------------------------------------- executor pods (driver-sidecar modes)


@dataclass
class ExecutorPodWatcher:
    """Lists the job's executor pods; remembers executors that never ran until they do."""

    core: k8s.CoreV1Api
    namespace: str
    settings: KubernetesConfig
    app_id: str = ""
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    _never_ran: set[str] = field(default_factory=set)
    _ran: set[str] = field(default_factory=set)

    @property
    def selector(self) -> str:
        extra = f",spark-app-selector={self.app_id}" if self.app_id else ""
        return self.settings.executor_selector + extra

    def check(self) -> PodReport:
        """Raises ActuatorError when the pods cannot be listed (403 names the missing RBAC rule)."""
        try:
            pods = Retrying(self.settings.retries, self.settings.backoff_s, self.sleep).call(
                lambda: self.core.list_namespaced_pod(
                    self.namespace, label_selector=self.selector, _request_timeout=self.settings.request_timeout_s
                )
            )
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            status = exc.status if isinstance(exc, ApiException) else None
            message = _status_message(exc) if isinstance(exc, ApiException) else type(exc).__name__
            raise ActuatorError(
                explain_api_error(
                    status,
                    verb="list",
                    resource="pods",
                    namespace=self.namespace,
                    name=f"-l {self.selector}",
                    message=message,
                )
            ) from None
        views = [executor_pod(p) for p in pods.items or []]
        report = classify_executor_pods(views, now_s=self.clock(), pending_timeout_s=self.settings.pending_timeout_s)
        self._ran.update(p.executor_id for p in views if p.ever_ran)
        self._never_ran = (self._never_ran | set(report.never_ran)) - self._ran
        return report

    def never_ran(self) -> frozenset[str]:
        """Executor ids seen whose pods never started a container: capacity learning should ignore them."""
        return frozenset(self._never_ran)


@dataclass
class PendingAwareActuator:
    """Wraps the agent actuator: a target whose executor pods stay Pending is reported unreachable (unconfirmed),
    and no further scale-out is asked for while pods are stuck (the cluster cannot place the ones it has)."""

    inner: Actuator
    watcher: ExecutorPodWatcher

    def current(self) -> int:
        return self.inner.current()

    def apply(self, target: int) -> Actuation:
        before = self._report()
        if isinstance(before, PodReport) and before.stuck and target > self._live_or(target):
            detail = before.unreachable_detail(self.watcher.settings.pending_timeout_s)
            return Actuation(target, Outcome.REFUSED, f"not scaling out: {detail}")
        actuation = self.inner.apply(target)
        if not actuation.outcome.changed_the_job:
            return actuation
        after = self._report()
        if isinstance(after, str):
            return replace(actuation, detail=f"{actuation.detail}; {after}".strip("; "))
        if after.stuck:
            detail = after.unreachable_detail(self.watcher.settings.pending_timeout_s)
            return replace(actuation, outcome=Outcome.UNCONFIRMED, detail=f"{actuation.detail}; {detail}".strip("; "))
        return actuation

    def never_ran(self) -> frozenset[str]:
        return self.watcher.never_ran()

    def _report(self) -> PodReport | str:
        try:
            return self.watcher.check()
        except ActuatorError as exc:
            return f"executor pods not checked: {exc}"

    def _live_or(self, default: int) -> int:
        try:
            return self.inner.current()
        except ActuatorError:
            return default


# ---------------------------------------------------------------- factories for the runtime


def make_kubernetes_actuator(config: Config, environ: Mapping[str, str] | None = None) -> KubernetesScaleActuator:
    """actuator.kind kubernetes: the scale actuator for kubernetes.kind/name."""
    api_client, namespace = load_api_client(config.kubernetes, os.environ if environ is None else environ)
    return KubernetesScaleActuator(k8s.AppsV1Api(api_client), namespace, config.kubernetes, config.actuator)


def make_pod_watcher(config: Config, environ: Mapping[str, str]) -> ExecutorPodWatcher:
    """Driver-sidecar modes: the watcher of this job's executor pods (app id from kubernetes.app_id_env)."""
    api_client, namespace = load_api_client(config.kubernetes, environ)
    return ExecutorPodWatcher(
        k8s.CoreV1Api(api_client), namespace, config.kubernetes, app_id=environ.get(config.kubernetes.app_id_env, "")
    )
