"""Execute: executor pods on Kubernetes — which are stuck Pending, never ran or were lost to a fault (evicted, node
lost) — and the actuator that heeds them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes import client as k8s

from daedalus_spark.config import Config, KubernetesConfig
from daedalus_spark.execute.kubernetes_client import API_ERRORS, api_call, explain_exception, load_api_client
from daedalus_spark.execute.port import Actuation, Actuator, ActuatorError, Outcome

log = logging.getLogger(__name__)

REMEMBERED_LOST = 1024  # lost executors remembered, so their series stay out of capacity learning


@dataclass(frozen=True)
class ExecutorPod:
    """What the watcher needs of one executor pod."""

    executor_id: str
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    created_s: float
    ever_ran: bool  # a container of it started at some point
    why_pending: str = ""  # the scheduler's or kubelet's reason (Unschedulable: 0/3 nodes ..., ImagePullBackOff)
    name: str = ""  # the pod's name
    lost: str = ""  # the fault that took it ('evicted: The node was low on resource: memory.'); '' while healthy
    lost_s: float = 0.0  # when it was lost (the condition's transition; else when first seen lost)


@dataclass(frozen=True)
class PodReport:
    running: int
    stuck: tuple[ExecutorPod, ...]  # Pending longer than the timeout
    never_ran: frozenset[str]  # executor ids of pods no container of which ever started
    lost: tuple[ExecutorPod, ...] = ()  # lost to a fault (evicted, drained, node lost)
    unreplaced: tuple[ExecutorPod, ...] = ()  # of those, the ones no executor pod started after has replaced yet

    def lost_detail(self) -> str:
        """Why no rescale is applied now: the lost pods not yet replaced, each with its fault."""
        if not self.unreplaced:
            return ""
        pods = "; ".join(f"executor pod {p.name or p.executor_id} {p.lost}" for p in self.unreplaced[:3])
        more = f" (and {len(self.unreplaced) - 3} more)" if len(self.unreplaced) > 3 else ""
        one = len(self.unreplaced) == 1
        return f"{pods}{more}; waiting for {'its replacement' if one else 'their replacements'}"

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


def classify_executor_pods(
    pods: Iterable[ExecutorPod],
    *,
    now_s: float,
    pending_timeout_s: float,
    vanished: Iterable[ExecutorPod] = (),
) -> PodReport:
    """`vanished`: pods lost earlier, not replaced then, and no longer listed (Spark deletes a failed executor's pod):
    they still wait for their replacements."""
    pods = list(pods)
    stuck = tuple(
        sorted(
            (p for p in pods if p.phase == "Pending" and now_s - p.created_s > pending_timeout_s),
            key=lambda p: p.created_s,
        )
    )
    listed = {p.executor_id for p in pods}
    lost = [p for p in pods if p.lost] + [p for p in vanished if p.executor_id not in listed]
    lost.sort(key=lambda p: p.lost_s)
    # A replacement still Pending after pending_timeout_s is stuck (its own rule); none asked for by then: Spark's
    # target no longer needs one. Either way the lost pod stops holding rescales.
    waiting = [p for p in lost if now_s - p.lost_s < pending_timeout_s]
    return PodReport(
        running=sum(p.phase == "Running" and not p.lost for p in pods),
        stuck=stuck,
        never_ran=frozenset(p.executor_id for p in pods if not p.ever_ran),
        lost=tuple(lost),
        unreplaced=_unreplaced(waiting, pods),
    )


def _unreplaced(lost: list[ExecutorPod], pods: list[ExecutorPod]) -> tuple[ExecutorPod, ...]:
    """Lost pods without a replacement: a healthy Running executor pod created at or after the loss, each taken by
    one lost pod (Spark asks for a new executor, with a new id, for every one it lost)."""
    started = sorted(p.created_s for p in pods if p.phase == "Running" and not p.lost)
    waiting = []
    for pod in lost:  # earliest loss first
        match = next((i for i, created_s in enumerate(started) if created_s >= pod.lost_s), None)
        if match is None:
            waiting.append(pod)
        else:
            del started[match]
    return tuple(waiting)


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
    lost, lost_s = _fault(pod, statuses, phase) if status else ("", 0.0)
    return ExecutorPod(
        labels.get("spark-exec-id", meta.name),
        phase,
        created,
        ran or phase == "Running",
        _why_pending(status, statuses) if phase == "Pending" else "",
        name=meta.name or "",
        lost=lost,
        lost_s=lost_s,
    )


# DisruptionTarget reasons (https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions)
DISRUPTIONS = {
    "EvictionByEvictionAPI": "evicted through the Eviction API (a drain)",
    "DeletionByTaintManager": "deleted by the taint manager (a NoExecute taint, such as an unreachable node)",
    "TerminationByKubelet": "terminated by the kubelet (node pressure or shutdown)",
    "PreemptionByScheduler": "preempted by the scheduler",
    "DeletionByPodGC": "deleted by the pod garbage collector (its node is gone)",
}


def _fault(pod: Any, statuses: list[Any], phase: str) -> tuple[str, float]:
    """The fault that took a pod and when (0.0: not recorded; '' for a healthy pod). A pod deleted without a
    DisruptionTarget condition is Spark's own scale-in (or an older cluster's drain): not a fault here."""
    status = pod.status
    conditions = {c.type: c for c in status.conditions or []}
    disruption, ready = conditions.get("DisruptionTarget"), conditions.get("Ready")
    not_ready_s = _since(ready) if ready is not None and ready.status != "True" else 0.0
    if phase == "Failed" and status.reason == "Evicted":
        return f"evicted: {status.message or 'no message'}", _since(disruption) or not_ready_s
    if disruption is not None and disruption.status == "True":
        what = DISRUPTIONS.get(disruption.reason or "", f"disrupted ({disruption.reason})")
        return f"{what}: {disruption.message or 'no message'}", _since(disruption)
    if status.reason == "NodeLost":
        return f"lost with its node: {status.message or 'no message'}", not_ready_s
    containers_ready = bool(statuses) and all(s.ready for s in statuses)
    if phase == "Running" and not_ready_s and containers_ready:
        # The node controller marks the pods of a node it no longer hears from not Ready; the kubelet's last
        # report (containers ready) stays as it was.
        node = pod.spec.node_name if pod.spec else "?"
        return f"not Ready on node {node} (node not ready or unreachable)", not_ready_s
    return "", 0.0


def _since(condition: Any) -> float:
    when = condition.last_transition_time if condition is not None else None
    return when.timestamp() if when else 0.0


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
    """Lists the job's executor pods; remembers executors that never ran until they do, and those lost to a fault."""

    core: k8s.CoreV1Api
    namespace: str
    settings: KubernetesConfig
    app_id: str = ""
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    _never_ran: set[str] = field(default_factory=set)
    _ran: set[str] = field(default_factory=set)
    _lost: dict[str, ExecutorPod] = field(default_factory=dict)  # executor id -> its pod when first seen lost
    _waiting: dict[str, ExecutorPod] = field(default_factory=dict)  # lost, not yet replaced

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
        now_s = self.clock()
        views = [self._stamped(executor_pod(p), now_s) for p in pods.items or []]
        report = classify_executor_pods(
            views,
            now_s=now_s,
            pending_timeout_s=self.settings.pending_timeout_s,
            vanished=self._waiting.values(),
        )
        self._waiting = {p.executor_id: p for p in report.unreplaced}
        self._ran.update(p.executor_id for p in views if p.ever_ran)
        self._never_ran = (self._never_ran | set(report.never_ran)) - self._ran
        return report

    def _stamped(self, pod: ExecutorPod, now_s: float) -> ExecutorPod:
        """A lost pod with its loss time: Kubernetes' record, else when this watcher first saw it lost."""
        if not pod.lost:
            return pod
        if not pod.lost_s:
            first = self._lost.get(pod.executor_id)
            pod = replace(pod, lost_s=first.lost_s if first is not None else now_s)
        if pod.executor_id not in self._lost:
            self._lost[pod.executor_id] = pod
            for gone in list(self._lost)[: max(0, len(self._lost) - REMEMBERED_LOST)]:
                del self._lost[gone]  # Spark never reuses an executor id: old ones only take memory
        return pod

    def never_ran(self) -> frozenset[str]:
        """Executor ids seen whose pods never started a container: capacity learning should ignore them."""
        return frozenset(self._never_ran)

    def lost(self) -> dict[str, str]:
        """Executor id -> the fault that took its pod, for every one seen lost (replaced or not)."""
        return {executor_id: pod.lost for executor_id, pod in self._lost.items()}


@dataclass
class PendingAwareActuator:
    """Wraps the agent actuator: no further scale-out is asked for while executor pods are stuck Pending (the
    cluster cannot place the ones it has), and while the loop confirms a target, stuck pods are the obstacle that
    makes it unconfirmed (unreachable) before confirm_timeout_s runs out. While a pod lost to a fault (evicted,
    drained, its node lost) is not yet replaced, no rescale is asked for at all: the live count is in flux and Spark
    is replacing it; and the loop keeps lost and never-ran executors' series out of capacity learning."""

    inner: Actuator
    watcher: ExecutorPodWatcher
    _unchecked: str = ""  # why the pods could not be listed last time ('' when they could)

    def current(self) -> int:
        return self.inner.current()

    def apply(self, target: int) -> Actuation:
        before = self._report()
        if before is not None and before.unreplaced:
            return Actuation(target, Outcome.REFUSED, f"not rescaling: {before.lost_detail()}")
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

    def lost_executors(self) -> dict[str, str]:
        """Executor id -> why its series is not capacity: its pod's fault, or that it never ran (pods listed now)."""
        self._report()
        never = dict.fromkeys(self.watcher.never_ran(), "never ran")
        return {**never, **self.watcher.lost()}

    def _report(self) -> PodReport | None:
        try:
            report = self.watcher.check()
        except ActuatorError as exc:
            # Checked every tick now (lost executors): a lasting problem is said once, then at debug level.
            level = logging.DEBUG if str(exc) == self._unchecked else logging.WARNING
            self._unchecked = str(exc)
            log.log(level, "executor pods not checked: %s", exc)
            return None
        self._unchecked = ""
        return report

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
