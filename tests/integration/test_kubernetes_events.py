"""Kubernetes Events per rescale: written with the real client, aggregated like `kubectl describe` shows them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from kubernetes import client as k8s

from daedalus_spark.config import Config
from daedalus_spark.domain import Reason
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.runtime.kubernetes_events import (
    EventPublisher,
    EventSpec,
    ObjectRef,
    driver_events_object,
    event_for,
    make_event_publisher,
)
from tests.integration.fake_apiserver import FakeApiServer
from tests.integration.k8s_helpers import NAMESPACE, FakeTime, scale_actuator, step


@pytest.mark.parametrize(
    "result,expected",
    [
        pytest.param(step(None, target=2, reason=Reason.CURRENT_IS_SMALLEST_VALID), None, id="no-rescale-no-event"),
        pytest.param(
            step(Outcome.APPLIED, detail="3 replicas after 4.0 s"),
            EventSpec(
                "Normal",
                "SuccessfulRescale",
                "scale_out_smallest_valid: scale-out 2 -> 3 applied: 3 replicas after 4.0 s; workload_avg_per_s=1200.5 "
                "capacity_current_per_s=1000.0 capacity_target_per_s=1500.0 predicted_recovery_s=240.0",
            ),
            id="applied",
        ),
        pytest.param(
            step(Outcome.FAILED, detail="HTTP 500"),
            EventSpec(
                "Warning",
                "FailedRescale",
                "scale_out_smallest_valid: scale-out 2 -> 3 failed: HTTP 500; workload_avg_per_s=1200.5 "
                "capacity_current_per_s=1000.0 capacity_target_per_s=1500.0 predicted_recovery_s=240.0",
            ),
            id="failed",
        ),
        pytest.param(
            step(Outcome.UNCONFIRMED, current=4, target=2, reason=Reason.SCALE_IN_SMALLEST_VALID),
            EventSpec(
                "Warning",
                "RescaleUnconfirmed",
                "scale_in_smallest_valid: scale-out 4 -> 2 unconfirmed; workload_avg_per_s=1200.5 "
                "capacity_current_per_s=1000.0 capacity_target_per_s=1500.0 predicted_recovery_s=240.0",
            ),
            id="unconfirmed-is-a-warning",
        ),
        pytest.param(
            step(Outcome.ACCEPTED, detail="target 3 set, 2 executors live"),
            EventSpec(
                "Normal",
                "SuccessfulRescale",
                "scale_out_smallest_valid: scale-out 2 -> 3 accepted: target 3 set, 2 executors live; "
                "workload_avg_per_s=1200.5 capacity_current_per_s=1000.0 capacity_target_per_s=1500.0 "
                "predicted_recovery_s=240.0",
            ),
            id="accepted",
        ),
        pytest.param(
            step(Outcome.DRY_RUN, detail="dry run: would set 3 executors"),
            EventSpec(
                "Normal",
                "RescaleRecommended",
                "scale_out_smallest_valid: scale-out 2 -> 3 dry_run: dry run: would set 3 executors; "
                "workload_avg_per_s=1200.5 capacity_current_per_s=1000.0 capacity_target_per_s=1500.0 "
                "predicted_recovery_s=240.0",
                repeats="scale_out_smallest_valid: scale-out 2 -> 3 dry_run: dry run: would set 3 executors",
            ),
            id="advisor-recommends-one-event-for-its-repeats",
        ),
        pytest.param(
            replace(step(None), confirmation=Actuation(3, Outcome.APPLIED, "3 executors live after 60 s", 3, 60.0)),
            EventSpec("Normal", "RescaleApplied", "scale-out target 3 applied: 3 executors live after 60 s"),
            id="confirmed-later",
        ),
        pytest.param(
            replace(step(None), confirmation=Actuation(3, Outcome.UNCONFIRMED, "target 3 accepted, but 2 ...")),
            EventSpec("Warning", "RescaleUnconfirmed", "scale-out target 3 unconfirmed: target 3 accepted, but 2 ..."),
            id="not-confirmed-later-is-a-warning",
        ),
    ],
)
def test_event_for(result, expected):
    assert event_for(result) == expected


DRIVER_POD = ObjectRef("v1", "Pod", "wordcount-driver", NAMESPACE, "pod-uid")


def owner(api_version: str, kind: str, name: str = "wordcount", uid: str = "app-uid") -> k8s.V1OwnerReference:
    return k8s.V1OwnerReference(api_version=api_version, kind=kind, name=name, uid=uid)


@pytest.mark.parametrize(
    "owners,expected",
    [
        pytest.param([], DRIVER_POD, id="no-owner-the-pod"),
        pytest.param(
            [owner("sparkoperator.k8s.io/v1beta2", "SparkApplication")],
            ObjectRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "wordcount", NAMESPACE, "app-uid"),
            id="the-spark-application",
        ),
        pytest.param(
            [owner("v1", "ConfigMap", "x", "cm-uid"), owner("sparkoperator.k8s.io/v1beta2", "SparkApplication")],
            ObjectRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "wordcount", NAMESPACE, "app-uid"),
            id="the-spark-application-among-others",
        ),
        pytest.param([owner("apps/v1", "ReplicaSet", "rs")], DRIVER_POD, id="another-owner-the-pod"),
        pytest.param([owner("example.com/v1", "SparkApplication")], DRIVER_POD, id="another-groups-kind-the-pod"),
    ],
)
def test_driver_events_go_on_the_spark_application_that_owns_the_pod(owners, expected):
    assert driver_events_object(DRIVER_POD, owners) == expected


def test_long_details_are_cut_to_the_message_limit():
    spec = event_for(step(Outcome.REFUSED, detail="x" * 5000))
    assert spec is not None and len(spec.message) == 1024 and spec.message.endswith("...")


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    yield server
    server.stop()


def publisher(api: FakeApiServer, time: FakeTime) -> EventPublisher:
    ref = ObjectRef("apps/v1", "StatefulSet", "spark-worker", NAMESPACE, "uid-1")
    return EventPublisher(k8s.CoreV1Api(api.api_client()), ref, time.now, 0.5, instance="controller-0")


def test_repeated_event_patches_count_and_last_timestamp(api):
    time = FakeTime()
    events = publisher(api, time)
    events.publish(step(Outcome.FAILED, detail="HTTP 500"))
    time.sleep(60)
    events.publish(step(Outcome.FAILED, detail="HTTP 500"))
    time.sleep(60)
    events.publish(step(Outcome.FAILED, detail="HTTP 500"))
    assert len(api.events) == 1
    (event,) = api.events.values()
    assert event["count"] == 3 and event["type"] == "Warning" and event["reason"] == "FailedRescale"
    stamps = [datetime.fromisoformat(event[k].replace("Z", "+00:00")) for k in ("firstTimestamp", "lastTimestamp")]
    assert stamps == [datetime(2027, 1, 15, 8, 0, tzinfo=UTC), datetime(2027, 1, 15, 8, 2, tzinfo=UTC)]  # RFC 3339
    assert event["involvedObject"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "spark-worker",
        "namespace": NAMESPACE,
        "uid": "uid-1",
    }
    assert event["source"] == {"component": "daedalus-spark"} and event["metadata"]["name"].startswith("spark-worker.")


def test_a_different_message_is_a_new_event(api):
    time = FakeTime()
    events = publisher(api, time)
    events.publish(step(Outcome.APPLIED))
    time.sleep(1)
    events.publish(step(Outcome.APPLIED, current=3, target=4))
    assert sorted(e["count"] for e in api.events.values()) == [1, 1]


def test_an_expired_event_is_created_again(api):
    time = FakeTime()
    events = publisher(api, time)
    events.publish(step(Outcome.APPLIED))
    api.events.clear()  # the API server's event TTL passed
    time.sleep(3600)
    events.publish(step(Outcome.APPLIED))
    assert [e["count"] for e in api.events.values()] == [1]


def test_a_forbidden_event_is_logged_never_raised(api, caplog):
    api.forbidden.add(("POST", "events"))
    with caplog.at_level(logging.WARNING):
        publisher(api, FakeTime()).publish(step(Outcome.APPLIED))
    assert "needs 'create' and 'patch' on 'events'" in caplog.text and api.events == {}


def test_an_unreachable_api_server_is_logged_never_raised(api, caplog):
    events = publisher(api, FakeTime())
    api.stop()
    with caplog.at_level(logging.WARNING):
        events.publish(step(Outcome.APPLIED))
    assert "not written" in caplog.text
    api.start()  # the fixture stops it again


def test_sidecar_events_go_on_the_driver_pod_named_by_the_downward_api(api, tmp_path):
    kc = tmp_path / "kc"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{api.url}"}}}}]
users: [{{name: me, user: {{token: abc}}}}]
contexts: [{{name: here, context: {{cluster: fake, user: me, namespace: {NAMESPACE}}}}}]
current-context: here
""")
    config = Config.model_validate({"kubernetes": {"kubeconfig": str(kc)}})
    assert make_event_publisher(config, environ={}) is None  # no pod name: no events, one warning
    events = make_event_publisher(config, environ={"DAEDALUS_POD_NAME": "wordcount-driver", "DAEDALUS_POD_UID": "u-9"})
    assert events is not None and events.ref == ObjectRef("v1", "Pod", "wordcount-driver", NAMESPACE, "u-9")


def test_scale_mode_events_go_on_the_scaled_object_through_the_actuators_client(api) -> None:
    scaled = api.add("statefulsets", NAMESPACE, "spark-worker", 2)
    actuator = scale_actuator(api, FakeTime())
    config = Config.model_validate({"actuator": {"kind": "kubernetes"}, "kubernetes": {"name": "spark-worker"}})
    events = make_event_publisher(config, environ={}, scaler=actuator)
    assert events is not None
    assert events.ref == ObjectRef("apps/v1", "StatefulSet", "spark-worker", NAMESPACE, scaled.uid)
    assert events.core.api_client is actuator.apps.api_client  # one client, not a second one loaded from scratch
    with pytest.raises(ValueError, match="scaler="):
        make_event_publisher(config, environ={})
