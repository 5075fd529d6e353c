"""Kubernetes actuator and executor-pod watcher with the real kubernetes client against a fake API server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from kubernetes import client as k8s

from daedalus_spark.config import Config, KubernetesConfig
from daedalus_spark.execute.kubernetes_client import KubernetesSetupError, api_error_kind, load_api_client
from daedalus_spark.execute.kubernetes_pods import (
    ExecutorPod,
    ExecutorPodWatcher,
    PendingAwareActuator,
    classify_executor_pods,
)
from daedalus_spark.execute.kubernetes_scale import make_kubernetes_actuator
from daedalus_spark.execute.port import Actuation, ActuatorError, Outcome, PendingTarget
from tests.integration.fake_apiserver import FakeApiServer, executor_pod
from tests.integration.k8s_helpers import NAMESPACE, FakeTime, scale_actuator


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    server.add("statefulsets", NAMESPACE, "spark-worker", 2)
    yield server
    server.stop()


def patches(api: FakeApiServer) -> list[str]:
    return [method for method, _ in api.requests if method == "PATCH"]


def test_applied_target_patches_the_scale_with_a_merge_patch_and_a_resource_version(api):
    time = FakeTime()
    actuator = scale_actuator(api, time)
    result = actuator.apply(4)
    assert result.outcome is Outcome.ACCEPTED and result.live == 2 and actuator.current() == 4
    assert api.content_types == ["application/merge-patch+json"]
    assert api.objects[("statefulsets", NAMESPACE, "spark-worker")].resource_version == 2


def test_a_target_already_set_writes_nothing(api):
    actuator = scale_actuator(api, FakeTime())
    assert actuator.apply(2).outcome is Outcome.ACCEPTED
    assert patches(api) == []


def test_conflicts_are_retried_each_after_a_fresh_read(api):
    api.conflicts_by_others = 2
    time = FakeTime()
    result = scale_actuator(api, time).apply(5)
    assert result.outcome is Outcome.ACCEPTED, result.detail
    writes = [m for m, path in api.requests if path.endswith("/scale")][:6]
    assert writes == ["GET", "PATCH"] * 3  # every PATCH carries the resourceVersion just read
    assert time.sleeps == [0.5, 1.0]


@pytest.mark.parametrize(
    "status,outcome,words",
    [
        pytest.param(
            403,
            Outcome.REFUSED,
            ["forbidden", "RBAC verb 'patch'", "statefulsets/scale jobs/spark-worker", "resourceNames: [spark-worker]"],
            id="forbidden-names-the-rbac-rule",
        ),
        pytest.param(404, Outcome.REFUSED, ["statefulsets/scale jobs/spark-worker not found"], id="missing-object"),
    ],
)
def test_refusals_name_the_object_and_are_not_retried(api, status, outcome, words):
    if status == 403:
        api.forbidden.add(("PATCH", "statefulsets"))
    else:
        api.objects.clear()
    time = FakeTime()
    result = scale_actuator(api, time).apply(4)
    assert result.outcome is outcome and not result.outcome.changed_the_job
    for word in words:
        assert word in result.detail
    assert time.sleeps == []


def test_forbidden_read_raises_an_actuator_error_naming_get(api):
    api.forbidden.add(("GET", "statefulsets"))
    with pytest.raises(ActuatorError, match="RBAC verb 'get' on 'statefulsets/scale'"):
        scale_actuator(api, FakeTime()).current()


def test_server_errors_back_off_then_fail(api):
    api.scripted["GET"] = [500, 500, 500]
    time = FakeTime()
    result = scale_actuator(api, time).apply(4)
    assert result.outcome is Outcome.FAILED and "HTTP 500" in result.detail
    assert time.sleeps == [0.5, 1.0] and patches(api) == []


def test_a_transient_server_error_is_ridden_out(api):
    api.scripted["PATCH"] = [503]
    time = FakeTime()
    assert scale_actuator(api, time).apply(4).outcome is Outcome.ACCEPTED
    assert time.sleeps == [0.5]


def test_a_slow_api_server_times_out_within_the_bounded_retries(api):
    api.delay_s = 2.0  # longer than request_timeout_s 0.2
    time = FakeTime()
    result = scale_actuator(api, time, request_timeout_s=0.2, retries=2).apply(4)
    assert result.outcome is Outcome.FAILED and "no answer from the API server" in result.detail
    assert time.sleeps == [0.5]


def test_pods_that_come_up_late_are_confirmed_on_a_later_tick(api):
    api.objects[("statefulsets", NAMESPACE, "spark-worker")].join_reads = 3
    time = FakeTime()
    actuator = scale_actuator(api, time)
    assert actuator.apply(6).outcome is Outcome.ACCEPTED and time.sleeps == []  # the tick does not wait
    pending = PendingTarget(6, accepted_s=0.0, timeout_s=90.0)
    verdicts = [pending.verdict(actuator.current(), now_s=10.0 * tick) for tick in (1, 2, 3, 4)]
    assert verdicts[:3] == [None, None, None]  # three reads see the 2 old replicas, the fourth all 6
    assert verdicts[3] is not None and verdicts[3].outcome is Outcome.APPLIED and verdicts[3].live == 6


def test_pods_that_never_come_up_are_unconfirmed(api):
    api.objects[("statefulsets", NAMESPACE, "spark-worker")].join_reads = 1000
    actuator = scale_actuator(api, FakeTime())
    assert actuator.apply(6).outcome is Outcome.ACCEPTED
    result = PendingTarget(6, accepted_s=0.0, timeout_s=5.0).verdict(actuator.current(), now_s=5.0)
    assert result is not None and result.outcome is Outcome.UNCONFIRMED and result.live == 2
    assert "target 6 accepted, but 2 executors live after 5 s" in result.detail


def test_deployments_are_scaled_through_their_own_subresource(api):
    api.add("deployments", NAMESPACE, "spark-worker", 1)
    result = scale_actuator(api, FakeTime(), kind="Deployment").apply(3)
    assert result.outcome is Outcome.ACCEPTED
    assert ("PATCH", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/spark-worker/scale") in api.requests


@pytest.mark.parametrize(
    "status,kind",
    [
        (None, "retry"),
        (409, "retry"),
        (429, "retry"),
        (500, "retry"),
        (403, "refuse"),
        (404, "refuse"),
        (422, "refuse"),
        (302, "fail"),
    ],
    ids=lambda v: str(v),
)
def test_api_error_kinds(status, kind):
    assert api_error_kind(status) == kind


# ------------------------------------------------------------------ client loading


def kubeconfig(path, server: str, namespace: str = "analytics") -> str:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{server}"}}}}]
users: [{{name: me, user: {{token: abc}}}}]
contexts: [{{name: here, context: {{cluster: fake, user: me, namespace: {namespace}}}}}]
current-context: here
""")
    return str(path)


def test_kubeconfig_is_loaded_with_its_context_namespace(api, tmp_path):
    api.add("statefulsets", "analytics", "spark-worker", 3)
    config = Config.model_validate(
        {
            "actuator": {"kind": "kubernetes"},
            "kubernetes": {"in_cluster": False, "kubeconfig": kubeconfig(tmp_path / "kc", api.url)},
        }
    )
    actuator = make_kubernetes_actuator(config, environ={})
    assert actuator.namespace == "analytics" and actuator.current() == 3


def test_auto_uses_the_kubeconfig_outside_a_pod(tmp_path, api):
    settings = KubernetesConfig(kubeconfig=kubeconfig(tmp_path / "kc", api.url), namespace="jobs")
    client, namespace = load_api_client(settings, environ={})
    assert namespace == "jobs" and client.configuration.host == api.url


@pytest.mark.parametrize(
    "settings,environ,words",
    [
        pytest.param({"in_cluster": True}, {}, "cannot load the in-cluster service account", id="in-cluster-outside"),
        pytest.param(
            {"in_cluster": "auto"},
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
            "in-cluster service account",
            id="auto-in-a-pod-without-token",
        ),
    ],
)
def test_unloadable_credentials_give_one_clear_error(settings, environ, words):
    with pytest.raises(KubernetesSetupError, match=words):
        load_api_client(KubernetesConfig(**settings), environ)


def test_a_missing_kubeconfig_is_refused_with_the_config_naming_it():
    # refused where validate-config refuses it too, before any client is made
    with pytest.raises(ValueError, match=r"kubernetes\.kubeconfig \(/nonexistent/kc\): cannot read"):
        KubernetesConfig(in_cluster=False, kubeconfig="/nonexistent/kc")


# ------------------------------------------------------------------ executor pods

NOW = 1_800_000_000.0


def pod(executor_id, phase, age_s, ran=False, why=""):
    return ExecutorPod(executor_id, phase, NOW - age_s, ran, why)


@pytest.mark.parametrize(
    "pods,stuck,never_ran",
    [
        pytest.param([pod("1", "Running", 500, True), pod("2", "Running", 30, True)], [], set(), id="all-running"),
        pytest.param(
            [pod("1", "Running", 500, True), pod("2", "Pending", 60)], [], {"2"}, id="young-pending-not-stuck"
        ),
        pytest.param(
            [pod("1", "Running", 500, True), pod("2", "Pending", 121, why="Unschedulable: 0/3 nodes")],
            ["2"],
            {"2"},
            id="old-pending-stuck",
        ),
        pytest.param([pod("3", "Failed", 900), pod("4", "Failed", 900, True)], [], {"3"}, id="failed-before-running"),
        pytest.param([pod("5", "Pending", 130, True)], ["5"], set(), id="restarting-pod-ran-before"),
    ],
)
def test_classify_executor_pods(pods, stuck, never_ran):
    report = classify_executor_pods(pods, now_s=NOW, pending_timeout_s=120)
    assert [p.executor_id for p in report.stuck] == stuck
    assert report.never_ran == frozenset(never_ran)


def pod_json(executor_id, age_s, **kwargs):
    return executor_pod(executor_id, created_s=NOW - age_s, namespace=NAMESPACE, **kwargs)


def watcher(api, time, app_id="spark-app-1"):
    return ExecutorPodWatcher(
        k8s.CoreV1Api(api.api_client()),
        NAMESPACE,
        KubernetesConfig(pending_timeout_s=120, request_timeout_s=0.5),
        app_id,
        clock=time.now,
        sleep=time.sleep,
    )


def test_watcher_lists_only_this_apps_executors_and_remembers_those_that_never_ran(api):
    time = FakeTime(NOW)
    api.pods = [
        pod_json("1", 600),
        pod_json("2", 300, running=False, unschedulable=True),
        pod_json("9", 300, running=False, app="another-app"),
    ]
    w = watcher(api, time)
    report = w.check()
    assert [p.executor_id for p in report.stuck] == ["2"] and report.running == 1
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu." in report.unreachable_detail(120)
    api.pods = [pod_json("1", 600)]  # executor 2 was given up on and deleted
    assert w.check().stuck == () and w.never_ran() == {"2"}
    api.pods.append(pod_json("2", 400))
    w.check()
    assert w.never_ran() == frozenset()


def test_watcher_forbidden_names_the_list_verb(api):
    api.forbidden.add(("GET", "pods"))
    time = FakeTime(NOW)
    with pytest.raises(ActuatorError, match="RBAC verb 'list' on 'pods'"):
        watcher(api, time).check()
    assert time.sleeps == []  # a refusal is not retried


def test_watcher_rides_out_a_server_error(api):
    api.scripted["GET"] = [500]
    time = FakeTime(NOW)
    assert watcher(api, time).check().running == 0 and time.sleeps == [1.0]


@dataclass
class StandInAgent:
    """What the agent actuator would answer: the target is accepted, `live` executors are up."""

    live: int
    asked: list[int] = field(default_factory=list)

    def current(self) -> int:
        return self.live

    def apply(self, target: int) -> Actuation:
        self.asked.append(target)
        return Actuation(target, Outcome.ACCEPTED, f"target {target} set, {self.live} executors live", self.live)


def test_a_target_whose_pods_stay_pending_is_unreachable(api):
    api.pods = [pod_json("1", 600)]
    agent = StandInAgent(live=1)
    actuator = PendingAwareActuator(agent, watcher(api, FakeTime(NOW)))
    assert actuator.apply(2).outcome is Outcome.ACCEPTED and actuator.obstacle(2) == ""
    api.pods.append(pod_json("2", 200, running=False, unschedulable=True))  # the pod the new target created
    assert actuator.obstacle(2).startswith("target unreachable: 1 executor pod(s) Pending")
    verdict = PendingTarget(2, accepted_s=NOW - 30, timeout_s=90).verdict(1, NOW, actuator.obstacle(2))
    assert verdict is not None and verdict.outcome is Outcome.UNCONFIRMED and "Unschedulable" in verdict.detail
    again = actuator.apply(3)
    assert again.outcome is Outcome.REFUSED and again.detail.startswith("not scaling out: target unreachable")
    assert agent.asked == [2]  # no further scale-out into pending pods
    assert actuator.apply(1).outcome is Outcome.ACCEPTED  # scaling in is still allowed
    assert actuator.never_ran() == {"2"}


def test_pods_that_cannot_be_listed_are_no_obstacle(api):
    api.forbidden.add(("GET", "pods"))
    actuator = PendingAwareActuator(StandInAgent(live=3), watcher(api, FakeTime(NOW)))
    assert actuator.apply(4).outcome is Outcome.ACCEPTED and actuator.obstacle(4) == ""
