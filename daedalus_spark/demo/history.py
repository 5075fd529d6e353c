"""Demo: the topic's earlier load cycles in the demo's Prometheus before the run — kafka-exporter's end-offset series
as the generator would have produced them (the trace's cycle repeated), for `monitor.promserver.write_history`. A job
attached to a topic that has been produced to for days finds this history in its Prometheus; the controller reads
it at start (`controller.backfill_s`) and forecasts the cycle from it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from daedalus_spark.workloads.pacing import Pacer

OFFSET_SERIES = "kafka_topic_partition_current_offset"  # kafka-exporter's name (kafkacluster/exporter.py)
PROMTOOL_TIMEOUT_S = 300.0  # writing the history (monitor.promserver.write_history)


def topic_history(
    pacer: Pacer,
    *,
    topic: str,
    partitions: int,
    cycles: int,
    end_s: int,
    step_s: int = 1,
    end_offsets: Sequence[int] | None = None,
) -> Iterator[str]:
    """OpenMetrics lines: each partition's end offset every `step_s` over the `cycles` load cycles (the pacer's
    whole trace each) that end at `end_s` (Unix seconds, the last sample one step before it), the records due split
    evenly over the partitions as the generator writes them round-robin.

    `end_offsets`: each partition's offset at `end_s`, where the topic's live offsets go on from, so that no rate
    over the seam sees a counter reset (the demo's warm-up lines are in the topic before its load begins); the
    history's earliest offsets then lie below zero. None: the offsets start at 0."""
    if partitions < 1 or cycles < 1 or step_s < 1:
        raise ValueError(f"partitions {partitions}, cycles {cycles}, step_s {step_s}: each must be at least 1")
    if end_offsets is not None and len(end_offsets) != partitions:
        raise ValueError(f"end_offsets has {len(end_offsets)} values for {partitions} partitions")
    cycle_s = pacer.duration_s
    span = int(cycles * cycle_s)
    start_s = end_s - span
    last = cycles * pacer.total
    shift = (
        [0] * partitions
        if end_offsets is None
        else [o - _share(last, p, partitions) for p, o in enumerate(end_offsets)]
    )
    yield f"# TYPE {OFFSET_SERIES} gauge"
    for p in range(partitions):
        for elapsed in range(0, span, step_s):
            whole, into = divmod(elapsed, cycle_s)
            offset = shift[p] + _share(int(whole) * pacer.total + pacer.due(into), p, partitions)
            yield f'{OFFSET_SERIES}{{topic="{topic}",partition="{p}"}} {offset} {start_s + elapsed}'
    yield "# EOF"


def _share(records: int, partition: int, partitions: int) -> int:
    """Of `records` written round-robin, those in `partition` (every record whose index modulo `partitions` is it)."""
    return records // partitions + (1 if partition < records % partitions else 0)
