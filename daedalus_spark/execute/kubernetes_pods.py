"""Execute: executor pods on Kubernetes — which are stuck Pending or never ran, and the actuator that heeds them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from daedalus_spark.config import Config, KubernetesConfig
from daedalus_spark.execute.kubernetes_client import API_ERRORS, api_call, explain_exception, load_api_client
from daedalus_spark.execute.port import Actuation, Actuator, ActuatorError, Outcome

log = logging.getLogger(__name__)


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
            pods = api_call(
                lambda: self.core.list_namespaced_pod(
                    self.namespace, label_selector=self.selector, _request_timeout=self.settings.request_timeout_s
                ),
                self.settings,
                self.sleep,
            )
        except API_ERRORS as exc:
            where = f"-l {self.selector}"
            raise ActuatorError(
                explain_exception(exc, verb="list", resource="pods", namespace=self.namespace, name=where)
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
    """Wraps the agent actuator: no further scale-out is asked for while executor pods are stuck Pending (the
    cluster cannot place the ones it has), and while the loop confirms a target, stuck pods are the obstacle that
    makes it unconfirmed (unreachable) before confirm_timeout_s runs out."""

    inner: Actuator
    watcher: ExecutorPodWatcher

    def current(self) -> int:
        return self.inner.current()

    def apply(self, target: int) -> Actuation:
        before = self._report()
        if before is not None and before.stuck and target > self._live_or(target):
            detail = before.unreachable_detail(self.watcher.settings.pending_timeout_s)
            return Actuation(target, Outcome.REFUSED, f"not scaling out: {detail}")
        return self.inner.apply(target)

    def obstacle(self, target: int) -> str:
        """Executor pods Pending longer than kubernetes.pending_timeout_s; nothing known when they cannot be listed."""
        report = self._report()
        if report is None or not report.stuck:
            return ""
        return report.unreachable_detail(self.watcher.settings.pending_timeout_s)

    def never_ran(self) -> frozenset[str]:
        return self.watcher.never_ran()

    def _report(self) -> PodReport | None:
        try:
            return self.watcher.check()
        except ActuatorError as exc:
            log.warning("executor pods not checked: %s", exc)
            return None

    def _live_or(self, default: int) -> int:
        try:
            return self.inner.current()
        except ActuatorError:
            return default


def make_pod_watcher(config: Config, environ: Mapping[str, str]) -> ExecutorPodWatcher:
    """Driver-sidecar modes: the watcher of this job's executor pods (app id from kubernetes.app_id_env)."""
    api_client, namespace = load_api_client(config.kubernetes, environ)
    return ExecutorPodWatcher(
        k8s.CoreV1Api(api_client), namespace, config.kubernetes, app_id=environ.get(config.kubernetes.app_id_env, "")
    )
