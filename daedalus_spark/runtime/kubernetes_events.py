"""Runtime (publisher): a Kubernetes Event per rescale, failed rescale and (advisor mode) recommended rescale, on the
scaled object or the SparkApplication (else the driver pod), aggregated as `kubectl describe` shows them."""

from __future__ import annotations

import logging
import os
import socket
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from daedalus_spark.config import Config
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.loop import StepResult

if TYPE_CHECKING:
    from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator

log = logging.getLogger(__name__)

COMPONENT = "daedalus-spark"
MAX_MESSAGE_CHARS = 1024  # what the events.k8s.io API accepts for a note; kubectl shows it on one line
EVIDENCE_KEYS = (
    "workload_avg_per_s",
    "forecast_max_per_s",
    "capacity_current_per_s",
    "capacity_target_per_s",
    "predicted_recovery_s",
    "consumer_lag_records",
)
MAX_REMEMBERED = 256  # distinct (reason, message, type) kept for aggregation
SPARK_OPERATOR_GROUP, SPARK_APPLICATION = "sparkoperator.k8s.io", "SparkApplication"


@dataclass(frozen=True)
class ObjectRef:
    """The object the events are about (the scaled StatefulSet/Deployment, the SparkApplication, or the driver pod)."""

    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str = ""  # kubectl describe selects events by uid; without it they show in `kubectl get events` only


@dataclass(frozen=True)
class EventSpec:
    type: str  # Normal or Warning
    reason: str
    message: str
    repeats: str = ""  # what a repeat of this event shares, when not the whole message (its numbers then updated)

    @property
    def key(self) -> tuple[str, str, str]:
        """Events with the same key are one Event, its count raised."""
        return (self.type, self.reason, self.repeats or self.message)


# Stable reasons, as the HorizontalPodAutoscaler writes them, so that alerts and `kubectl get events
# --field-selector reason=...` can name them; the decision's own code leads the message.
SUCCESSFUL = "SuccessfulRescale"
FAILED = "FailedRescale"
RECOMMENDED = "RescaleRecommended"  # advisor mode (run --dry-run): decided, not actuated
APPLIED = "RescaleApplied"  # a later tick saw an accepted target live
UNCONFIRMED = "RescaleUnconfirmed"  # accepted, but not seen live in time


def event_for(result: StepResult) -> EventSpec | None:
    """The event of one loop step: one for every rescale the actuator was asked for, one when an earlier accepted
    target is confirmed (RescaleApplied) or not (RescaleUnconfirmed), none otherwise."""
    actuation = result.actuation
    if actuation is None:
        return None if result.confirmation is None else _confirmation_event(result.confirmation)
    decision = result.decision
    ok = actuation.outcome in (Outcome.ACCEPTED, Outcome.APPLIED, Outcome.DRY_RUN)
    rendered = decision.evidence.fields()  # as the decision log writes them
    numbers = " ".join(f"{k}={rendered[k]}" for k in EVIDENCE_KEYS if rendered.get(k) is not None)
    head = (
        f"{decision.reason.value}: scale-out {decision.current_scaleout} -> {decision.target_scaleout} "
        f"{actuation.outcome.value}" + (f": {actuation.detail}" if actuation.detail else "")
    )
    message = _cut(head + (f"; {numbers}" if numbers else ""))
    reason = {Outcome.DRY_RUN: RECOMMENDED, Outcome.UNCONFIRMED: UNCONFIRMED}.get(
        actuation.outcome, SUCCESSFUL if ok else FAILED
    )
    # Advisor mode recommends the same rescale every tick while nobody applies it: one Event, counted, whose numbers
    # are the latest (as Flink's autoscaler does), not a new Event a tick.
    repeats = _cut(head) if actuation.outcome is Outcome.DRY_RUN else ""
    return EventSpec("Normal" if ok else "Warning", reason, message, repeats)


def _cut(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 3] + "..."


def _confirmation_event(confirmation: Actuation) -> EventSpec:
    ok = confirmation.outcome is Outcome.APPLIED
    message = f"scale-out target {confirmation.target} {confirmation.outcome.value}: {confirmation.detail}"
    return EventSpec("Normal" if ok else "Warning", APPLIED if ok else UNCONFIRMED, message)


@dataclass(frozen=True)
class Seen:
    name: str
    count: int


def next_write(seen: Mapping[tuple[str, str, str], Seen], spec: EventSpec) -> tuple[str, int]:
    """'create' (count 1) or 'patch' (the existing event's count + 1) for this event."""
    previous = seen.get(spec.key)
    return ("create", 1) if previous is None else ("patch", previous.count + 1)


def event_name(ref: ObjectRef, now_s: float) -> str:
    """`<object>.<hex nanoseconds>`, the way client-go names events."""
    return f"{ref.name}.{int(now_s * 1e9):x}"


@dataclass
class EventPublisher:
    """Loop publisher: writes a core/v1 Event per rescale; the same one again patches count and lastTimestamp."""

    core: k8s.CoreV1Api
    ref: ObjectRef
    clock: Callable[[], float]
    request_timeout_s: float = 10
    instance: str = field(default_factory=socket.gethostname)
    _seen: OrderedDict[tuple[str, str, str], Seen] = field(default_factory=OrderedDict)

    def publish(self, result: StepResult) -> None:
        spec = event_for(result)
        if spec is None:
            return
        try:
            self.record(spec)
        except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            status = getattr(exc, "status", None)
            hint = " (RBAC: the service account needs 'create' and 'patch' on 'events')" if status == 403 else ""
            log.warning(
                "event %s on %s/%s not written: %s%s",
                spec.reason,
                self.ref.kind,
                self.ref.name,
                status or type(exc).__name__,
                hint,
            )
        except Exception:  # a publisher must not stop the loop
            log.exception("event publisher failed")

    def record(self, spec: EventSpec) -> None:
        now_s = self.clock()
        key = spec.key
        action, count = next_write(self._seen, spec)
        if action == "patch":
            name = self._seen[key].name
            try:
                self.core.patch_namespaced_event(
                    name,
                    self.ref.namespace,
                    {"count": count, "lastTimestamp": _timestamp(now_s), "message": spec.message},
                    _content_type="application/merge-patch+json",
                    _request_timeout=self.request_timeout_s,
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise
                action, count = "create", 1  # the event expired (the API server keeps them an hour by default)
        if action == "create":
            name = event_name(self.ref, now_s)
            self.core.create_namespaced_event(
                self.ref.namespace, self._body(name, spec, now_s), _request_timeout=self.request_timeout_s
            )
        self._seen[key] = Seen(name, count)
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_REMEMBERED:
            self._seen.popitem(last=False)

    def _body(self, name: str, spec: EventSpec, now_s: float) -> k8s.CoreV1Event:
        ref = self.ref
        involved = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "namespace": ref.namespace}
        if ref.uid:
            involved["uid"] = ref.uid
        stamp = _timestamp(now_s)
        return k8s.CoreV1Event.model_validate(
            {
                "metadata": {"name": name, "namespace": ref.namespace},
                "involvedObject": involved,
                "type": spec.type,
                "reason": spec.reason,
                "message": spec.message,
                "count": 1,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT,
                "reportingInstance": self.instance,
            }
        )


def driver_events_object(pod: ObjectRef, owners: Iterable[k8s.V1OwnerReference]) -> ObjectRef:
    """The SparkApplication that owns the driver pod, named by the pod's ownerReferences (no read of it: the
    reference carries its uid), so that `kubectl describe sparkapplication` lists the events and they outlive the
    driver; the pod itself when no SparkApplication owns it (spark-submit)."""
    for owner in owners:
        group = owner.api_version.partition("/")[0]
        if owner.kind == SPARK_APPLICATION and group == SPARK_OPERATOR_GROUP and owner.name:
            return ObjectRef(owner.api_version, owner.kind, owner.name, pod.namespace, owner.uid or "")
    return pod


def _driver_owners(core: k8s.CoreV1Api, pod: ObjectRef, timeout_s: float) -> list[k8s.V1OwnerReference]:
    """The driver pod's ownerReferences; none (events on the pod) when it cannot be read."""
    try:
        read = core.read_namespaced_pod(pod.name, pod.namespace, _request_timeout=timeout_s)
    except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
        status = getattr(exc, "status", None) or type(exc).__name__
        log.warning("events on pod %s: its owner is unknown (reading the pod: %s)", pod.name, status)
        return []
    return list(read.metadata.owner_references or []) if read.metadata else []


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_event_publisher(
    config: Config,
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], float] | None = None,
    *,
    scaler: KubernetesScaleActuator | None = None,
) -> EventPublisher | None:
    """The events publisher for the configured mode (None when kubernetes.events is off).

    actuator.kind kubernetes: events on the object `scaler` scales, through its API client. Otherwise (driver
    sidecar): on the SparkApplication that owns the driver pod named by kubernetes.pod_name_env (downward API), else
    on that pod; without the name, no events.
    """
    import time

    from daedalus_spark.execute.kubernetes_client import load_api_client

    settings = config.kubernetes
    environ = os.environ if environ is None else environ
    if not settings.events:
        return None
    if scaler is not None:
        api_client, namespace = scaler.apps.api_client, scaler.namespace
        ref = ObjectRef("apps/v1", settings.kind, settings.name, namespace, scaler.object_uid())
        return EventPublisher(k8s.CoreV1Api(api_client), ref, clock or time.time, settings.request_timeout_s)
    if config.actuator.kind == "kubernetes":
        raise ValueError("actuator.kind kubernetes: the events go on the scaled object: pass its actuator (scaler=)")
    pod = environ.get(settings.pod_name_env, "")
    if not pod:
        log.warning("no Kubernetes events: %s is not set (downward API metadata.name)", settings.pod_name_env)
        return None
    api_client, namespace = load_api_client(settings, environ)
    core = k8s.CoreV1Api(api_client)
    driver = ObjectRef("v1", "Pod", pod, namespace, environ.get(settings.pod_uid_env, ""))
    ref = driver_events_object(driver, _driver_owners(core, driver, settings.request_timeout_s))
    log.info("Kubernetes events on %s %s/%s", ref.kind, ref.namespace, ref.name)
    return EventPublisher(core, ref, clock or time.time, settings.request_timeout_s)
