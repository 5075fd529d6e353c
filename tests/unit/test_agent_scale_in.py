"""Scale-in by the Python agent: decommissioning where Spark's is on, killing otherwise or where a decommission is
declined; executors asked to leave stop counting as serving and are never chosen twice."""

from __future__ import annotations

from typing import Any

import pytest

from daedalus_spark.agent.driverui import ExecutorInfo
from daedalus_spark.agent.scaler import ExecutorScaler


class _Conf:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def getBoolean(self, key: str, default: bool) -> bool:
        return self.enabled if key == "spark.decommission.enabled" else default


class _Backend:
    def __init__(self, accepts: bool, calls: list[tuple[str, Any]]) -> None:
        self.accepts, self.calls = accepts, calls

    def decommissionExecutor(self, executor_id: str, info: Any, adjust: bool, by_executor: bool) -> bool:
        self.calls.append(("decommission", executor_id))
        assert adjust and not by_executor and info == ("scale-in to 1", None)
        return self.accepts


class _Context:
    """The JVM SparkContext's developer API as a standalone scheduler answers it."""

    def __init__(self, *, enabled: bool, accepts: bool = True) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.conf, self.backend = _Conf(enabled), _Backend(accepts, self.calls)

    def getConf(self) -> _Conf:
        return self.conf

    def schedulerBackend(self) -> _Backend:
        return self.backend

    def requestTotalExecutors(self, n: int, *_: Any) -> bool:
        self.calls.append(("request", n))
        return True

    def killExecutors(self, ids: list[str]) -> bool:
        self.calls.append(("kill", ids))
        return True


class _Jvm:
    """The Py4J names the scaler reaches: conversions, the allocation-client check and the decommission info."""

    class PythonUtils:
        toSeq = staticmethod(list)  # noqa: N815 - Py4J names
        toScalaMap = staticmethod(dict)  # noqa: N815

    class java:  # noqa: N801 - Py4J's package
        class util:  # noqa: N801
            HashMap = dict

        class lang:  # noqa: N801
            class Class:
                @staticmethod
                def forName(name: str) -> Any:
                    assert name == "org.apache.spark.ExecutorAllocationClient"
                    return type("Client", (), {"isInstance": staticmethod(lambda b: isinstance(b, _Backend))})

    class scala:  # noqa: N801
        class Option:
            apply = staticmethod(lambda value: value)

    class org:  # noqa: N801
        class apache:  # noqa: N801
            class spark:  # noqa: N801
                class scheduler:  # noqa: N801
                    class ExecutorDecommissionInfo:
                        apply = staticmethod(lambda message, host: (message, host))


LIVE = [ExecutorInfo("1", True, 1, 0, 5.0), ExecutorInfo("2", True, 1, 0, 1.0), ExecutorInfo("driver", True, 1, 0, 0)]


@pytest.mark.parametrize(
    ("asked", "enabled", "accepts", "in_force", "calls"),
    [
        pytest.param("decommission", True, True, "decommission", [("decommission", "2"), ("request", 1)], id="dec"),
        pytest.param("decommission", False, True, "kill", [("kill", ["2"]), ("request", 1)], id="dec-not-enabled"),
        pytest.param(
            "decommission",
            True,
            False,
            "decommission",
            [("decommission", "2"), ("kill", ["2"]), ("request", 1)],
            id="declined-is-killed",
        ),
        pytest.param("kill", True, True, "kill", [("kill", ["2"]), ("request", 1)], id="kill-asked"),
    ],
)
def test_scale_in_decommissions_where_spark_can(asked, enabled, accepts, in_force, calls) -> None:
    context = _Context(enabled=enabled, accepts=accepts)
    scaler = ExecutorScaler(context, _Jvm(), lambda: LIVE, scale_in=asked)
    assert scaler.in_force() == in_force
    assert scaler.apply(1) == ["2"]  # the least busy leaves
    assert context.calls == calls


def test_an_executor_asked_to_leave_is_not_serving_nor_chosen_again() -> None:
    context = _Context(enabled=True)
    scaler = ExecutorScaler(context, _Jvm(), lambda: LIVE, scale_in="decommission")
    scaler.apply(1)
    assert scaler.current() == 1 and [e.executor_id for e in scaler.serving(LIVE)] == ["1"]
    scaler.apply(1)  # executor 2 still finishing its tasks: nobody else is asked to leave
    assert context.calls[-1] == ("request", 1) and ("decommission", "1") not in context.calls
    assert scaler.serving(LIVE[:1]) and scaler.leaving == set()  # gone for good: forgotten
