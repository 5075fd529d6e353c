"""The agent keeps its target: executors a standalone master launched past it are removed after a grace period."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from daedalus_spark.agent.agent import SURPLUS_GRACE_S, Agent, AgentConfig
from daedalus_spark.agent.collector import DriverView
from daedalus_spark.agent.driverui import ExecutorInfo


@dataclass
class FakeScaler:
    target: int | None
    applied: list[int] = field(default_factory=list)

    def apply(self, target: int) -> list[str]:
        self.applied.append(target)
        return []


@dataclass
class FakeCollector:
    view: DriverView


def agent_with(live: int, target: int | None) -> tuple[Agent, FakeScaler]:
    executors = [ExecutorInfo(str(i), True, 1, 0, 0.0) for i in range(live)] + [ExecutorInfo("driver", True, 1, 0, 0.0)]
    scaler = FakeScaler(target)
    agent = Agent(
        AgentConfig(),
        reader=None,
        tracker=None,
        collector=FakeCollector(DriverView(executors=executors)),
        scaler=scaler,
        registry=None,
    )  # type: ignore[arg-type]
    return agent, scaler


@pytest.mark.parametrize(
    "live,target,applied",
    [
        pytest.param(2, 1, [1], id="surplus-outlasting-the-grace-is-removed"),
        pytest.param(1, 1, [], id="at-target"),
        pytest.param(1, 3, [], id="executors-still-joining"),
        pytest.param(3, None, [], id="no-target-yet"),
    ],
)
def test_reconcile_after_the_grace(live, target, applied):
    agent, scaler = agent_with(live, target)
    since = agent._reconcile(None, now=100.0)
    since = agent._reconcile(since, now=100.0 + SURPLUS_GRACE_S / 2)
    assert scaler.applied == []  # within the grace: an executor may simply be leaving
    agent._reconcile(since, now=100.0 + SURPLUS_GRACE_S)
    assert scaler.applied == applied
