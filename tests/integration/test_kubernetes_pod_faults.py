"""An executor pod evicted, a node lost: the real kubernetes client and pod watcher against the stand-in API server,
the real agent actuator and agent endpoint, and the real loop step (docs/hardening.md, "On Kubernetes")."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pytest
from kubernetes import client as k8s

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import KubernetesConfig
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation, Reason
from daedalus_spark.execute.kubernetes_pods import (
    ExecutorPod,
    ExecutorPodWatcher,
    PendingAwareActuator,
    classify_executor_pods,
    executor_pod,
)
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.knowledge.state import InMemoryKnowledgeStore
from daedalus_spark.loop import Loop
from daedalus_spark.testing import CAPACITY, CONFIG, Recorder
from tests.contract.actuator_contract import AgentHarness, FakeDriver
from tests.integration.fake_apiserver import FakeApiServer
from tests.integration.fake_apiserver import executor_pod as pod_json
from tests.integration.k8s_helpers import NAMESPACE

NOW = 1_800_000_000.0

# ------------------------------------------------------------------ classification (the client's own models)


def when(age_s: float) -> datetime:
    return datetime.fromtimestamp(NOW - age_s, UTC)


def v1pod(
    *,
    phase: str = "Running",
    reason: str | None = None,
    message: str | None = None,
    ready: str = "True",
    containers_ready: bool = True,
    disruption: str | None = None,
    deleting: bool = False,
    ran: bool = True,
) -> k8s.V1Pod:
    """Executor 7's pod, created 600 s ago on node-2, in the state a fault leaves it (conditions changed 60 s ago)."""
    conditions = [k8s.V1PodCondition(type="Ready", status=ready, last_transition_time=when(60))]
    if disruption:
        conditions.append(
            k8s.V1PodCondition(
                type="DisruptionTarget", status="True", reason=disruption, message="m", last_transition_time=when(50)
            )
        )
    state = k8s.V1ContainerState(running=k8s.V1ContainerStateRunning(started_at=when(590))) if ran else None
    container = k8s.V1ContainerStatus(
        name="e", image="job", image_id="", ready=containers_ready, restart_count=0, state=state
    )
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(
            name="wordcount-exec-7",
            creation_timestamp=when(600),
            labels={"spark-exec-id": "7"},
            deletion_timestamp=when(-30) if deleting else None,
        ),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="e")], node_name="node-2"),
        status=k8s.V1PodStatus(
            phase=phase, reason=reason, message=message, conditions=conditions, container_statuses=[container]
        ),
    )


@pytest.mark.parametrize(
    "pod,lost,lost_age_s",
    [
        pytest.param(v1pod(), "", None, id="healthy"),
        pytest.param(
            v1pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory.", ready="False"),
            "evicted: The node was low on resource: memory.",
            60,
            id="evicted-by-the-kubelet",
        ),
        pytest.param(
            v1pod(deleting=True, disruption="EvictionByEvictionAPI"),
            "evicted through the Eviction API (a drain): m",
            50,
            id="drained",
        ),
        pytest.param(
            v1pod(deleting=True, disruption="DeletionByTaintManager", ready="False"),
            "deleted by the taint manager (a NoExecute taint, such as an unreachable node): m",
            50,
            id="taint-deleted",
        ),
        pytest.param(
            v1pod(ready="False"),
            "not Ready on node node-2 (node not ready or unreachable)",
            60,
            id="node-not-ready",
        ),
        pytest.param(
            v1pod(ready="False", reason="NodeLost", message="Node node-2 which was running pod x is unresponsive"),
            "lost with its node: Node node-2 which was running pod x is unresponsive",
            60,
            id="node-lost-reason",
        ),
        pytest.param(v1pod(deleting=True), "", None, id="deleted-by-spark-scale-in-is-no-fault"),
        pytest.param(v1pod(ready="False", containers_ready=False), "", None, id="container-not-ready-is-no-fault"),
        pytest.param(v1pod(phase="Pending", ready="False", containers_ready=False, ran=False), "", None, id="pending"),
    ],
)
def test_executor_pod_faults(pod, lost, lost_age_s):
    view = executor_pod(pod)
    assert view.lost == lost and view.name == "wordcount-exec-7"
    if lost_age_s is not None:
        assert view.lost_s == NOW - lost_age_s


def view(executor_id, *, created_age_s, phase="Running", lost="", lost_age_s=0.0):
    return ExecutorPod(executor_id, phase, NOW - created_age_s, phase != "Pending", lost=lost, lost_s=NOW - lost_age_s)


EVICTED = view("2", created_age_s=600, phase="Failed", lost="evicted: low memory", lost_age_s=100)


@pytest.mark.parametrize(
    "pods,unreplaced",
    [
        pytest.param([view("1", created_age_s=600), EVICTED], ["2"], id="evicted-not-replaced"),
        pytest.param([EVICTED, view("3", created_age_s=90)], [], id="replaced-by-a-later-pod"),
        pytest.param([EVICTED, view("3", created_age_s=90, phase="Pending")], ["2"], id="replacement-still-pending"),
        pytest.param([EVICTED, view("1", created_age_s=500)], ["2"], id="an-older-pod-is-no-replacement"),
        pytest.param(
            [EVICTED, view("4", created_age_s=600, lost="not Ready", lost_age_s=100), view("5", created_age_s=50)],
            ["4"],
            id="two-lost-one-replaced",
        ),
        pytest.param(
            [
                view("2", created_age_s=600, phase="Failed", lost="evicted", lost_age_s=130),
                view("1", created_age_s=600),
            ],
            [],
            id="no-replacement-within-the-pending-timeout-holds-no-longer",
        ),
    ],
)
def test_lost_pods_wait_for_their_replacements(pods, unreplaced):
    report = classify_executor_pods(pods, now_s=NOW, pending_timeout_s=120)
    assert [p.executor_id for p in report.unreplaced] == unreplaced
    assert report.never_ran == frozenset(p.executor_id for p in pods if p.phase == "Pending")


# ------------------------------------------------------------------ through the client, the agent and the loop


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = FakeApiServer(now_s=NOW).start()
    server.pods = [
        pod_json("1", created_s=NOW - 600, node="node-1"),
        pod_json("2", created_s=NOW - 600, node="node-2"),
    ]
    yield server
    server.stop()


@pytest.fixture
def agent() -> Iterator[AgentHarness]:
    harness = AgentHarness(FakeDriver(live=2, target=2))
    yield harness
    harness.stop()


def pod_aware(api: FakeApiServer, agent: AgentHarness, clock) -> PendingAwareActuator:
    watcher = ExecutorPodWatcher(
        k8s.CoreV1Api(api.api_client()),
        NAMESPACE,
        KubernetesConfig(pending_timeout_s=120, request_timeout_s=2.0),
        "spark-app-1",
        clock=clock,
    )
    return PendingAwareActuator(agent.actuator(), watcher)


def test_an_evicted_executor_holds_rescales_until_its_replacement_runs(api, agent):
    actuator = pod_aware(api, agent, lambda: api.now_s)
    api.now_s += 60
    api.evict("wordcount-exec-2")
    refused = actuator.apply(3)
    assert refused.outcome is Outcome.REFUSED and not refused.outcome.changed_the_job
    assert refused.detail == (
        "not rescaling: executor pod wordcount-exec-2 evicted: The node was low on resource: memory.; "
        "waiting for its replacement"
    )
    assert agent.driver.target == 2  # nothing sent to the agent
    api.now_s += 5
    api.pods.append(pod_json("3", created_s=api.now_s, running=False))  # Spark asks for executor 3
    assert actuator.apply(3).outcome is Outcome.REFUSED
    api.remove("wordcount-exec-2")  # Spark deletes the failed pod: still waiting for the replacement
    assert actuator.apply(1).outcome is Outcome.REFUSED and agent.driver.target == 2
    api.pods[-1] = pod_json("3", created_s=api.now_s, node="node-1")  # the replacement runs
    accepted = actuator.apply(3)
    assert accepted.outcome is Outcome.ACCEPTED and agent.driver.target == 3
    assert actuator.lost_executors() == {"2": "evicted: The node was low on resource: memory."}
    assert actuator.never_ran() == frozenset()  # neither the evicted pod (it ran) nor its replacement


def test_a_drain_through_the_eviction_api_holds_rescales(api, agent):
    actuator = pod_aware(api, agent, lambda: api.now_s)
    k8s.CoreV1Api(api.api_client()).create_namespaced_pod_eviction(
        "wordcount-exec-1",
        NAMESPACE,
        k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="wordcount-exec-1", namespace=NAMESPACE)),
    )
    refused = actuator.apply(3)
    assert refused.outcome is Outcome.REFUSED and "evicted through the Eviction API" in refused.detail
    assert "Eviction API: evicting" in refused.detail and agent.driver.target == 2


@dataclass
class NodeLossMonitor:
    """2 executors share 600 records/s; `dead` ones (on the lost node) read nothing, while the driver, which has not
    yet timed out their heartbeat, still counts them (`scaleout`)."""

    executors: list[str] = field(default_factory=lambda: ["1", "2"])
    dead: set[str] = field(default_factory=set)
    scaleout: int = 2
    lag_records: float = 0.0
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        series = {}
        for executor_id in self.executors:
            thr = np.zeros(60) if executor_id in self.dead else 300.0 * self.rng.uniform(0.97, 1.03, 60)
            util = np.clip(0.1 + 0.9 * thr / CAPACITY + self.rng.normal(0, 0.005, 60), 0, 1)
            series[executor_id] = (thr, util)
        working = sum(e not in self.dead for e in self.executors)
        self.lag_records += (600.0 - 300.0 * working) * 60
        return Observation.of(
            time_s=end_s,
            workload_per_s=600.0,
            executors=series,
            consumer_lag_records=self.lag_records,
            scaleout=self.scaleout,
        )

    def close(self) -> None:
        return None


def test_a_lost_node_keeps_its_executor_out_of_capacity_learning_and_rescales_wait(api, agent, caplog):
    clock = FakeClock(NOW)
    monitor, recorder = NodeLossMonitor(), Recorder()
    api.now_s = clock.now()
    loop = Loop(
        Controller(CONFIG), monitor, pod_aware(api, agent, clock.now), InMemoryKnowledgeStore(), clock, [recorder]
    )
    for _ in range(3):
        clock.advance(60)
        api.now_s = clock.now()
        loop.step()
    capacity = loop.controller.knowledge.capacity
    seen_before, points_before = capacity.last_seen_s["2"], capacity.regressions["2"].n
    assert seen_before == clock.now() and points_before > 0

    api.lose_node("node-2")  # the node controller marks its pods not Ready; executor 2 reads nothing
    monitor.dead = {"2"}
    with caplog.at_level(logging.WARNING, logger="daedalus_spark.loop"):
        for tick in range(4):
            clock.advance(60)
            api.now_s = clock.now()
            loop.step()
            if tick == 0:
                refused = loop.actuator.apply(3)  # a rescale decided now would not be sent
                assert refused.outcome is Outcome.REFUSED, refused
                assert "wordcount-exec-2 not Ready on node node-2" in refused.detail and agent.driver.target == 2
    during = recorder.results[3:]
    assert capacity.last_seen_s["2"] == seen_before and capacity.regressions["2"].n == points_before
    # read as capacity, the survivor's 300/s would be learned as the backlog floor of 2 executors (it was, without
    # the pod watcher, and the ticks then scaled out 2 -> 3 -> 4 while Spark was replacing the executor)
    assert 2 not in capacity.backlog_floor_per_scaleout
    for result in during:
        d = result.decision
        assert d.reason is Reason.SKIP_MISSING_DATA and not d.rescale, d
        assert d.evidence.fields()["problem"] == "metrics for 1 executors but the scale-out is 2"
    told = [r.getMessage() for r in caplog.records if "left out of capacity learning" in r.getMessage()]
    assert told == [
        "executor 2 left out of capacity learning: not Ready on node node-2 (node not ready or unreachable)"
    ]

    # tolerationSeconds (300 s) ran out: the taint manager deletes the pod, the driver drops executor 2 and asks
    # for executor 3, which starts on node-1
    api.taint_evict("node-2")
    monitor.executors, monitor.dead, monitor.scaleout = ["1", "3"], set(), 2
    api.pods.append(pod_json("3", created_s=clock.now() + 30, node="node-1"))
    clock.advance(60)
    api.now_s = clock.now()
    loop.step()
    assert loop.actuator.apply(3).outcome is Outcome.ACCEPTED and agent.driver.target == 3
    assert capacity.last_seen_s["2"] == seen_before  # its series never reached capacity learning


def test_pods_that_cannot_be_listed_are_said_once_and_what_was_seen_lost_stays_left_out(api, agent, caplog):
    actuator = pod_aware(api, agent, lambda: api.now_s)
    api.evict("wordcount-exec-2")
    assert actuator.lost_executors() == {"2": "evicted: The node was low on resource: memory."}
    api.forbidden.add(("GET", "pods"))
    with caplog.at_level(logging.DEBUG, logger="daedalus_spark.execute.kubernetes_pods"):
        for _ in range(3):
            assert actuator.lost_executors() == {"2": "evicted: The node was low on resource: memory."}
    levels = [r.levelno for r in caplog.records if "executor pods not checked" in r.getMessage()]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_a_loss_kubernetes_did_not_stamp_is_timed_from_when_the_watcher_first_saw_it(api, agent):
    actuator = pod_aware(api, agent, lambda: api.now_s)
    api.evict("wordcount-exec-2")
    del api.pod("wordcount-exec-2")["status"]["conditions"]  # no transition time recorded
    api.now_s += 500  # the pod is 1,100 s old: its age must not count as the time since the loss
    assert actuator.apply(3).outcome is Outcome.REFUSED
    api.now_s += 119
    assert actuator.apply(3).outcome is Outcome.REFUSED
    api.now_s += 1  # pending_timeout_s after it was first seen lost, and no replacement asked for
    assert actuator.apply(3).outcome is Outcome.ACCEPTED


def test_a_loop_whose_actuator_fails_to_tell_lost_executors_still_decides(caplog):
    @dataclass
    class Failing:
        def current(self) -> int:
            return 2

        def apply(self, target: int) -> Actuation:
            return Actuation(target, Outcome.REFUSED, "not asked")

        def lost_executors(self) -> dict[str, str]:
            raise RuntimeError("bug")

    clock = FakeClock(NOW + 60)
    loop = Loop(Controller(CONFIG), NodeLossMonitor(), Failing(), None, clock)
    with caplog.at_level(logging.ERROR, logger="daedalus_spark.loop"):
        result = loop.step()
    assert result.decision.reason.value and "lost executors not read" in caplog.text
    assert [e.executor_id for e in result.observation.executors] == ["1", "2"]
