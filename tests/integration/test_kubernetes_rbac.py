"""Least privilege, against the real kube-apiserver: the controller's ServiceAccount is granted exactly the overlays'
Roles (SelfSubjectRulesReview), and every verb of the controller's own rules is used: take any one away and one of
its duties (read and set the scale, write and count an event, list the executor pods) fails with a 403."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from daedalus_spark.execute.port import ActuatorError, Outcome
from daedalus_spark.kubecluster.apiserver import LocalApiServer
from daedalus_spark.runtime.kubernetes_events import ObjectRef, event_for
from tests.integration.k8s_backends import Real
from tests.integration.k8s_helpers import FakeTime, Grant, grants, step
from tests.integration.kustomize import EXAMPLES, OVERLAYS, rendered

pytestmark = pytest.mark.apiserver

# The spark-driver Role is also the driver's: Spark creates, watches and removes its executors (pods, their
# services and config maps, and reuses PVCs) with the pod's one service account. Of it the controller (the driver
# sidecar) uses `list` on pods; the other verbs are Spark's, which no duty of the controller exercises here.
SPARK_DRIVER_ROLE = "spark-driver"
CONTROLLER_RULES = {("", "pods"): {"list"}}  # of the spark-driver Role, what the sidecar itself calls


def reviewed_grants(client: k8s.ApiClient, namespace: str) -> set[Grant]:
    review = {"spec": {"namespace": namespace}}
    answer = k8s.AuthorizationV1Api(client).create_self_subject_rules_review(review)
    assert not answer.status.incomplete, answer.status.evaluation_error
    return grants(answer.status.resource_rules)


@pytest.mark.parametrize("overlay", OVERLAYS + EXAMPLES)
def test_the_controller_is_granted_the_overlays_roles_and_nothing_else(apiserver: LocalApiServer, overlay: str):
    real = Real(apiserver, rbac_from=(overlay,))
    # What every authenticated account may do anyway (RBAC's bootstrap policy: reviews of its own rights)
    baseline = reviewed_grants(apiserver.service_account_client(real.namespace, "nobody"), real.namespace)
    granted = reviewed_grants(real.controller, real.namespace) - baseline
    assert granted == set().union(*(grants(role["rules"]) for role in real.roles.values()))
    assert not any(name == "*" and group == "apps" for group, _, name, _ in granted)  # scale: one named object
    clusterwide = [d for d in rendered(overlay) if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert clusterwide == []


def duties(real: Real) -> dict[str, Callable[[], None]]:
    """What the controller does through the API, as the controller's code does it; each raises on a refusal."""
    clock = FakeTime(1_800_000_000.0)
    ref = ObjectRef("apps/v1", "StatefulSet", "spark-worker", real.namespace)
    events = real.publisher(clock, ref)
    spec = event_for(step(Outcome.FAILED, detail="HTTP 500"))
    assert spec is not None

    def scale() -> None:
        real.actuator(clock).current()
        result = real.actuator(clock).apply(3)
        if result.outcome is not Outcome.ACCEPTED:
            raise ActuatorError(result.detail)

    def event_twice() -> None:
        events.record(spec)  # created
        clock.sleep(60)
        events.record(spec)  # the same one again: its count patched

    def list_pods() -> None:
        real.watcher(clock, "spark-app-1").check()

    return {"scale": scale, "events": event_twice, "pods": list_pods}


def refusals(real: Real) -> dict[str, str]:
    failed = {}
    for name, duty in duties(real).items():
        try:
            duty()
        except (ApiException, ActuatorError) as exc:
            failed[name] = str(exc)[:300]
    return failed


def test_with_the_overlays_roles_every_duty_is_allowed(apiserver: LocalApiServer):
    assert refusals(Real(apiserver)) == {}


def controller_verbs() -> list[tuple[str, str, str]]:
    """(Role, resource, verb) for every verb of the Roles the controller's own duties need."""
    roles = {d["metadata"]["name"]: d for o in OVERLAYS for d in rendered(o) if d["kind"] == "Role"}
    out = []
    for name, role in sorted(roles.items()):
        for rule in role["rules"]:
            for resource in rule["resources"]:
                for group in rule["apiGroups"]:
                    spark = name == SPARK_DRIVER_ROLE
                    wanted = CONTROLLER_RULES.get((group, resource), set()) if spark else set(rule["verbs"])
                    out += [(name, resource, v) for v in rule["verbs"] if v in wanted]
    return out


@pytest.mark.parametrize("role,resource,verb", controller_verbs(), ids="-".join)
def test_every_verb_the_controller_is_granted_is_needed(apiserver: LocalApiServer, role, resource, verb):
    real = Real(apiserver)
    real.forbid(verb, resource)  # out of the Role; waits until the authorizer says no
    failed = refusals(real)
    assert failed, f"{role}: without {verb} on {resource} every duty still succeeds: the verb is not needed"
    assert all("forbidden" in why.lower() or "403" in why for why in failed.values()), failed


def test_a_config_naming_another_statefulset_than_the_role_is_refused_with_the_rule_to_grant(apiserver):
    """The Role names its StatefulSet: another name is a 403 (not the 404 the stand-in answers), before any lookup."""
    real = Real(apiserver, rbac_from=("standalone",))
    result = real.actuator(FakeTime(), name="spark-workers").apply(3)
    assert result.outcome is Outcome.REFUSED and "forbidden" in result.detail
    assert "'statefulsets/scale' (resourceNames: [spark-workers])" in result.detail
