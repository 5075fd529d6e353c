"""The agent in modes it cannot serve (local master, Spark's dynamic allocation) and when Spark declines a request:
the target is refused with HTTP 409 naming why, nothing is remembered, and the actuator reports `refused`."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from daedalus_spark.agent.agent import unservable_mode
from daedalus_spark.agent.driverui import ExecutorInfo
from daedalus_spark.agent.scaler import ExecutorScaler
from daedalus_spark.agent.server import Routes, serve
from daedalus_spark.agent.targets import TargetRefused
from daedalus_spark.config import ActuatorConfig
from daedalus_spark.execute.agent import AgentActuator
from daedalus_spark.execute.port import Outcome


@pytest.mark.parametrize(
    ("master", "dynamic_allocation", "named"),
    [
        pytest.param("local[*]", "false", "local mode", id="local-star"),
        pytest.param("local[2]", "", "local mode", id="local-n"),
        pytest.param("LOCAL", "false", "local mode", id="local-any-case"),
        pytest.param("spark://h:7077", "true", "dynamic allocation", id="standalone-with-da"),
        pytest.param("k8s://https://api:6443", " TRUE ", "dynamic allocation", id="kubernetes-with-da"),
        pytest.param("local[1]", "true", "local mode", id="local-wins-over-da"),
        pytest.param("spark://h:7077", "false", "", id="standalone-serves"),
        pytest.param("k8s://https://api:6443", "", "", id="kubernetes-serves"),
    ],
)
def test_modes_the_agent_cannot_serve(master: str, dynamic_allocation: str, named: str) -> None:
    why = unservable_mode(master, dynamic_allocation)
    assert (named in why) if named else why == ""


class _Jvm:
    class PythonUtils:
        @staticmethod
        def toSeq(items: Any) -> Any:
            return list(items)

        @staticmethod
        def toScalaMap(items: Any) -> Any:
            return dict(items)

    class java:  # noqa: N801 - Py4J's package
        class util:  # noqa: N801
            HashMap = dict


class _Context:
    """The JVM SparkContext's developer API as a local scheduler answers it: no scaling, `false`."""

    def __init__(self, request_ok: bool, kill_ok: bool) -> None:
        self.request_ok, self.kill_ok, self.calls = request_ok, kill_ok, []

    def requestTotalExecutors(self, n: int, *_: Any) -> bool:
        self.calls.append(("request", n))
        return self.request_ok

    def killExecutors(self, ids: list[str]) -> bool:
        self.calls.append(("kill", ids))
        return self.kill_ok


LIVE = [ExecutorInfo("1", True, 1, 0, 5.0), ExecutorInfo("2", True, 1, 0, 1.0)]


@pytest.mark.parametrize(
    ("request_ok", "kill_ok", "target", "message"),
    [
        pytest.param(False, True, 3, "requestTotalExecutors: false", id="request-declined"),
        pytest.param(True, False, 1, "killExecutors: false", id="kill-declined"),
    ],
)
def test_a_declined_request_raises_and_is_not_remembered(request_ok, kill_ok, target, message) -> None:
    scaler = ExecutorScaler(_Context(request_ok, kill_ok), _Jvm(), lambda: LIVE)
    with pytest.raises(TargetRefused, match=message):
        scaler.apply(target)
    assert scaler.target is None


def test_an_accepted_request_is_remembered() -> None:
    context = _Context(True, True)
    scaler = ExecutorScaler(context, _Jvm(), lambda: LIVE)
    assert scaler.apply(1) == ["2"]  # the least busy leaves
    assert scaler.target == 1 and context.calls == [("kill", ["2"]), ("request", 1)]


def test_a_refused_target_is_409_and_the_actuator_reports_refused_without_retrying() -> None:
    why = unservable_mode("spark://h:7077", "true")

    def refuse(target: int) -> dict[str, Any]:
        raise TargetRefused(why)

    routes = Routes(CollectorRegistry(), lambda: {"current": 2, "target": None}, refuse, 1, 4, None)
    server = serve(routes, "127.0.0.1", 0)
    sleeps: list[float] = []
    try:
        settings = ActuatorConfig(agent_url=f"http://127.0.0.1:{server.server_port}", retries=3, backoff_s=1)
        actuation = AgentActuator(settings, sleep=sleeps.append).apply(3)
    finally:
        server.shutdown()
        server.server_close()
    assert actuation.outcome is Outcome.REFUSED
    assert "HTTP 409" in actuation.detail and "dynamic allocation" in actuation.detail
    assert sleeps == []  # a refusal is final: no retry, no confirmation wait
