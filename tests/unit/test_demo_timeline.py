"""The demo's timeline reads the agent's own exposition: end offsets as the counter they are, and no target before the
agent's first (a gap in the plot, not -1)."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from daedalus_spark.agent.collector import AgentCollector, DriverView
from daedalus_spark.agent.queries import ProgressTracker
from daedalus_spark.demo.timeline import Sampler, totals
from tests.unit.query_progress import progress


def exposition(batch_id: int, target: int | None) -> str:
    """The agent's /metrics after `batch_id`: partition 0's end offset is 10 * (batch_id + 2)."""
    tracker = ProgressTracker()
    tracker.update(progress(batch_id))
    collector = AgentCollector(app_id="app-1", started_at=0.0, latest={}, target=lambda: target, clock=lambda: 5.0)
    collector.publish(DriverView(queries=tracker.snapshot()))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode()


@pytest.mark.parametrize(
    ("target", "shown"), [pytest.param(None, math.nan, id="none-yet-a-gap"), pytest.param(2, 2.0, id="applied")]
)
def test_workload_is_the_end_offsets_growth_and_the_target_what_the_agent_applied(
    target: int | None, shown: float
) -> None:
    sampler = Sampler("http://127.0.0.1:1/metrics")
    sampler.add(0.0, totals(exposition(0, target)))
    sampler.add(4.0, totals(exposition(3, target)))  # end offset 20 -> 50 in 4 s
    (sample,) = sampler.samples
    assert sample.workload_per_s == pytest.approx(7.5)
    assert sample.records_in == 50.0
    assert sample.target == shown or (math.isnan(sample.target) and math.isnan(shown))
