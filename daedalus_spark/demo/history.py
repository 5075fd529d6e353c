"""Demo: the topic's earlier load cycles in the demo's Prometheus before the run — kafka-exporter's end-offset series
as the generator would have produced them (the trace's cycle repeated), for `monitor.promserver.write_history`. A job
attached to a topic that has been produced to for days finds this history in its Prometheus; the controller reads
it at start (`controller.backfill_s`) and forecasts the cycle from it."""

from __future__ import annotations

from collections.abc import Iterator

from daedalus_spark.workloads.pacing import Pacer

OFFSET_SERIES = "kafka_topic_partition_current_offset"  # kafka-exporter's name (kafkacluster/exporter.py)
PROMTOOL_TIMEOUT_S = 300.0  # writing the history (monitor.promserver.write_history)


def topic_history(
    pacer: Pacer, *, topic: str, partitions: int, cycles: int, end_s: int, step_s: int = 1
) -> Iterator[str]:
    """OpenMetrics lines: each partition's end offset every `step_s` over the `cycles` load cycles (the pacer's
    whole trace each) that end at `end_s` (Unix seconds, the last sample one step before it), the records due split
    evenly over the partitions as the generator writes them round-robin."""
    if partitions < 1 or cycles < 1 or step_s < 1:
        raise ValueError(f"partitions {partitions}, cycles {cycles}, step_s {step_s}: each must be at least 1")
    cycle_s = pacer.duration_s
    span = int(cycles * cycle_s)
    start_s = end_s - span
    yield f"# TYPE {OFFSET_SERIES} gauge"
    for p in range(partitions):
        for elapsed in range(0, span, step_s):
            whole, into = divmod(elapsed, cycle_s)
            due = int(whole) * pacer.total + pacer.due(into)
            # round-robin: partition p holds every record whose index modulo `partitions` is p
            offset = due // partitions + (1 if p < due % partitions else 0)
            yield f'{OFFSET_SERIES}{{topic="{topic}",partition="{p}"}} {offset} {start_s + elapsed}'
    yield "# EOF"
