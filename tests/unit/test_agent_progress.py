"""The agent's accounting of query progress (batches, batch seconds, rows) and its exposition, from PySpark's own
progress objects built from the JSON Spark emits (no Spark needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from prometheus_client import CollectorRegistry
from pyspark.sql.streaming.listener import StreamingQueryProgress

from daedalus_spark import metricnames as names
from daedalus_spark.agent.collector import AgentCollector, DriverView
from daedalus_spark.agent.queries import ProgressTracker, batch_seconds
from tests.unit.query_progress import RUN_B, progress


@pytest.mark.parametrize(
    ("events", "batches", "seconds", "rows"),
    [
        pytest.param([progress(0), progress(1), progress(2)], 3, 3.0, 30, id="three-batches"),
        pytest.param([progress(0), progress(1, rows=0)], 2, 2.0, 10, id="a-0-row-batch-counts"),
        pytest.param([progress(0), progress(1), progress(1)], 2, 2.0, 30, id="a-repeated-batch-id-counts-once"),
        pytest.param(
            [progress(4), progress(5), progress(5, run=RUN_B), progress(6, run=RUN_B)], 4, 4.0, 40, id="restart"
        ),
        pytest.param(
            [progress(0, duration_ms={"triggerExecution": 250}), progress(1, duration_ms={"triggerExecution": 4750})],
            2,
            5.0,
            20,
            id="trigger-execution-summed",
        ),
        pytest.param([progress(0, duration_ms={}, batch_ms=1500)], 1, 1.5, 10, id="falls-back-to-batch-duration"),
        pytest.param([progress(0, duration_ms={"triggerExecution": -5})], 1, 0.0, 10, id="negative-duration-is-0"),
    ],
)
def test_tracker_counts_batches_and_their_seconds(
    events: list[StreamingQueryProgress], batches: int, seconds: float, rows: int
) -> None:
    tracker = ProgressTracker()
    for event in events:
        tracker.update(event)
    (stats,) = tracker.snapshot()
    assert (stats.batches_total, stats.input_rows_total) == (batches, rows)
    assert stats.batch_seconds_total == pytest.approx(seconds)
    assert stats.batch_id == events[-1].batchId  # the existing per-batch view still follows the latest event


def test_batch_seconds_of_a_progress_without_durations_is_zero() -> None:
    # an older PySpark's progress object: no durationMs, and no usable batchDuration either
    assert batch_seconds(SimpleNamespace(durationMs=None, batchDuration="n/a")) == 0.0


def test_collector_exports_the_batch_counters_next_to_the_existing_query_metrics() -> None:
    tracker = ProgressTracker()
    for event in (progress(0, rows=0), progress(1, duration_ms={"triggerExecution": 2500}), progress(1)):
        tracker.update(event)
    collector = AgentCollector(app_id="app-1", started_at=0.0, latest={}, target=lambda: None, clock=lambda: 5.0)
    collector.publish(DriverView(queries=tracker.snapshot()))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    labels = {"application_id": "app-1", "query": "wordcount"}

    def value(name: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value(names.total(names.QUERY_BATCHES)) == 2.0  # batch 1 delivered twice
    assert value(names.total(names.QUERY_BATCH_SECONDS)) == pytest.approx(3.5)
    assert value(names.total(names.QUERY_INPUT_RECORDS)) == 20.0  # unchanged: every event's numInputRows
    assert value(names.PREFIX + "query_last_batch_id") == 1.0
    assert value(names.PREFIX + "query_batch_duration_seconds") == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("applied", "exported"),
    [pytest.param(None, None, id="no-target-yet-no-sample"), pytest.param(3, 3.0, id="a-target-applied")],
)
def test_offsets_are_counters_and_an_unapplied_target_is_absent(applied: int | None, exported: float | None) -> None:
    tracker = ProgressTracker()
    tracker.update(progress(0))  # batch 0 ended at offset 10 of partition 0; Spark saw 20 at its end
    collector = AgentCollector(app_id="app-1", started_at=0.0, latest={}, target=lambda: applied, clock=lambda: 5.0)
    collector.publish(DriverView(queries=tracker.snapshot()))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    kinds = {family.name: family.type for family in collector.collect()}
    assert kinds[names.SOURCE_LATEST_OFFSET] == kinds[names.SOURCE_COMMITTED_OFFSET] == "counter"
    partition = {"application_id": "app-1", "query": "wordcount", "topic": "events", "partition": "0"}
    assert registry.get_sample_value(names.total(names.SOURCE_LATEST_OFFSET), partition) == 20.0
    assert registry.get_sample_value(names.total(names.SOURCE_COMMITTED_OFFSET), partition) == 10.0
    assert registry.get_sample_value(names.SOURCE_LATEST_OFFSET, partition) is None  # no gauge of the same name
    assert registry.get_sample_value(names.EXECUTORS_TARGET, {"application_id": "app-1"}) == exported
