"""Kubernetes contract: the scale actuator, the events and the executor-pod watcher give the same outcomes against
the stand-in API server and the real kube-apiserver (as the controller's ServiceAccount, with the overlays' Roles)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from daedalus_spark.execute.port import ActuatorError, Outcome
from daedalus_spark.runtime.kubernetes_events import ObjectRef
from tests.integration.fake_apiserver import FakeApiServer, executor_pod
from tests.integration.k8s_backends import MAX_REPLICAS, Real, StandIn
from tests.integration.k8s_helpers import FakeTime, step


@pytest.fixture(params=["stand-in", pytest.param("real", marks=pytest.mark.apiserver)])
def server(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "real":
        yield Real(request.getfixturevalue("max_replicas_policy"))
        return
    fake = FakeApiServer(max_replicas=MAX_REPLICAS).start()
    backend = StandIn(fake)
    backend.add("StatefulSet", "spark-worker", 2)
    yield backend
    fake.stop()


def test_a_target_is_written_to_the_scale_subresource(server):
    clock = FakeTime()
    result = server.actuator(clock).apply(4)
    assert result.outcome is Outcome.ACCEPTED, result.detail
    assert server.replicas("StatefulSet", "spark-worker") == 4 and clock.sleeps == []


def test_a_target_already_set_writes_nothing(server):
    before = server.version("StatefulSet", "spark-worker")
    assert server.actuator(FakeTime()).apply(2).outcome is Outcome.ACCEPTED
    assert server.version("StatefulSet", "spark-worker") == before


def test_another_writer_in_between_is_a_conflict_retried_after_a_fresh_read(server):
    server.others_write(2)
    clock = FakeTime()
    result = server.actuator(clock).apply(5)
    assert result.outcome is Outcome.ACCEPTED, result.detail
    assert server.replicas("StatefulSet", "spark-worker") == 5 and clock.sleeps == [0.5, 1.0]


def test_conflicts_past_the_retries_fail_naming_the_conflict(server):
    server.others_write(3)
    result = server.actuator(FakeTime()).apply(5)
    assert result.outcome is Outcome.FAILED and "HTTP 409" in result.detail and "modified" in result.detail
    assert server.replicas("StatefulSet", "spark-worker") == 2


def test_a_role_without_patch_is_a_refusal_naming_the_rbac_rule(server):
    server.forbid("patch", "statefulsets/scale")
    clock = FakeTime()
    result = server.actuator(clock).apply(4)
    assert result.outcome is Outcome.REFUSED and clock.sleeps == []
    for words in ["forbidden", "RBAC verb 'patch'", "statefulsets/scale", "resourceNames: [spark-worker]"]:
        assert words in result.detail
    assert 'cannot patch resource "statefulsets/scale"' in result.detail  # the server's own message
    assert server.replicas("StatefulSet", "spark-worker") == 2


def test_a_role_without_get_is_an_actuator_error_naming_get(server):
    server.forbid("get", "statefulsets/scale")
    with pytest.raises(ActuatorError, match="RBAC verb 'get' on 'statefulsets/scale'"):
        server.actuator(FakeTime()).current()


def test_a_missing_object_is_a_refusal_saying_not_found(server):
    server.remove("StatefulSet", "spark-worker")
    result = server.actuator(FakeTime()).apply(4)
    assert result.outcome is Outcome.REFUSED and "statefulsets/scale" in result.detail and "not found" in result.detail


@pytest.mark.parametrize(
    "target,words",
    [
        pytest.param(-1, "spec.replicas: Invalid value: -1: must be greater than or equal to 0", id="negative"),
        pytest.param(
            MAX_REPLICAS + 1,
            "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas' denied request: at most 8 replicas",
            id="over-the-admission-limit",
        ),
    ],
)
def test_an_invalid_target_is_a_422_refusal_not_retried_with_the_servers_reason(server, target, words):
    clock = FakeTime()
    result = server.actuator(clock).apply(target)
    assert result.outcome is Outcome.REFUSED and "HTTP 422" in result.detail and clock.sleeps == []
    assert words in result.detail
    assert server.replicas("StatefulSet", "spark-worker") == 2


def test_a_deployment_is_scaled_through_its_own_scale_subresource(server):
    server.add("Deployment", "spark-worker", 1)
    result = server.actuator(FakeTime(), kind="Deployment").apply(3)
    assert result.outcome is Outcome.ACCEPTED, result.detail
    assert server.replicas("Deployment", "spark-worker") == 3
    assert server.replicas("StatefulSet", "spark-worker") == 2


def test_events_are_created_then_counted_with_the_real_schema(server):
    clock = FakeTime(1_800_000_000.0)
    ref = ObjectRef("apps/v1", "StatefulSet", "spark-worker", server.namespace, "uid-1")
    events = server.publisher(clock, ref)
    events.record(events_spec := _spec())
    clock.sleep(60)
    events.record(events_spec)
    (event,) = server.events()
    assert event["count"] == 2 and event["type"] == "Warning" and event["reason"] == "FailedRescale"
    assert event["involvedObject"]["name"] == "spark-worker" and event["involvedObject"]["uid"] == "uid-1"
    stamps = [datetime.fromisoformat(event[k].replace("Z", "+00:00")) for k in ("firstTimestamp", "lastTimestamp")]
    assert stamps == [datetime(2027, 1, 15, 8, 0, tzinfo=UTC), datetime(2027, 1, 15, 8, 1, tzinfo=UTC)]
    assert event["source"] == {"component": "daedalus-spark"} and event["reportingInstance"] == "controller-0"


def test_a_role_without_create_on_events_is_logged_never_raised(server, caplog):
    server.forbid("create", "events")
    ref = ObjectRef("apps/v1", "StatefulSet", "spark-worker", server.namespace)
    with caplog.at_level(logging.WARNING):
        server.publisher(FakeTime(), ref).publish(step(Outcome.APPLIED))
    assert "needs 'create' and 'patch' on 'events'" in caplog.text and server.events() == []


def test_the_watcher_lists_this_apps_executor_pods_and_finds_the_stuck_one(server):
    created = [
        server.add_pod(executor_pod(eid, created_s=1_800_000_000.0, namespace=server.namespace, **kw))
        for eid, kw in [("1", {}), ("2", {"running": False, "unschedulable": True}), ("9", {"app": "another"})]
    ]
    clock = FakeTime(max(created) + 600)
    report = server.watcher(clock, "spark-app-1").check()
    assert report.running == 1 and [p.executor_id for p in report.stuck] == ["2"]
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu." in report.unreachable_detail(120)


def test_a_role_without_list_on_pods_is_an_actuator_error_naming_list(server):
    server.forbid("list", "pods")
    with pytest.raises(ActuatorError, match="RBAC verb 'list' on 'pods'") as refused:
        server.watcher(FakeTime(), "spark-app-1").check()
    assert f'cannot list resource "pods" in API group "" in the namespace "{server.namespace}"' in str(refused.value)


def test_a_drain_through_the_eviction_api_marks_the_executor_lost(server):
    created = server.add_pod(executor_pod("1", created_s=1_800_000_000.0, namespace=server.namespace))
    server.evict("wordcount-exec-1")
    clock = FakeTime(created + 60)
    report = server.watcher(clock, "spark-app-1").check()
    (lost,) = report.lost
    assert lost.lost == "evicted through the Eviction API (a drain): Eviction API: evicting"
    assert report.unreplaced == (lost,) and report.running == 0


def _spec() -> Any:
    from daedalus_spark.runtime.kubernetes_events import event_for

    spec = event_for(step(Outcome.FAILED, detail="HTTP 500"))
    assert spec is not None
    return spec
