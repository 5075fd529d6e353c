"""Spark's query progress as the agent receives it, built from the JSON Spark emits (no Spark needed): shared by the
agent's and the demo timeline's tests."""

from __future__ import annotations

from pyspark.sql.streaming.listener import StreamingQueryProgress

RUN_A, RUN_B = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"


def progress(
    batch_id: int,
    *,
    rows: int = 10,
    run: str = RUN_A,
    duration_ms: dict[str, int] | None = None,
    batch_ms: int = 900,
) -> StreamingQueryProgress:
    """One onQueryProgress payload as Spark writes it (only the fields the agent reads are meaningful)."""
    durations = {"addBatch": 700, "triggerExecution": 1000} if duration_ms is None else duration_ms
    source = {
        "description": "KafkaV2[Subscribe[events]]",
        "startOffset": {"events": {"0": 0}},
        "endOffset": {"events": {"0": 10 * (batch_id + 1)}},
        "latestOffset": {"events": {"0": 10 * (batch_id + 2)}},
        "numInputRows": rows,
        "inputRowsPerSecond": 5.0,
        "processedRowsPerSecond": 11.0,
        "metrics": {},
    }
    return StreamingQueryProgress.fromJson(
        {
            "id": "00000000-0000-0000-0000-000000000001",
            "runId": run,
            "name": "wordcount",
            "timestamp": "2026-11-24T00:00:00.000Z",
            "batchId": batch_id,
            "batchDuration": batch_ms,
            "numInputRows": rows,
            "inputRowsPerSecond": 5.0,
            "processedRowsPerSecond": 11.0,
            "durationMs": durations,
            "eventTime": {},
            "stateOperators": [],
            "sources": [source],
            "sink": {"description": "console", "numOutputRows": rows, "metrics": {}},
            "observedMetrics": {},
        }
    )
