"""Analyze: how a Spark job's source partitions fall onto n executors, and the busiest executor's share of the load.

Two rules, as Spark schedules a micro-batch's tasks (one task per source partition):
- `kafka`: Spark's Kafka source gives every task a preferred executor, the sorted executor list at
  floorMod(TopicPartition.hashCode(), n), so that cached consumers are reused; with micro-batches shorter than
  spark.locality.wait (3 s) the tasks run there. A partition is pinned to one executor at a given scale-out.
- `any_core`: a source without preferred locations (the local log): tasks go to whichever core is free, which
  spreads them like longest-processing-time-first list scheduling.
With equal partitions both give the busiest executor ceil(P / n) of P partitions.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Literal

import numpy as np

PartitionAssignment = Literal["kafka", "any_core"]
PartitionKey = tuple[str, int]  # (topic, partition)

_INT32 = 1 << 32


def _int32(value: int) -> int:
    value %= _INT32
    return value - _INT32 if value >= 1 << 31 else value


@lru_cache(maxsize=256)
def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode() of `text` (UTF-16 code units, 32-bit overflow)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) % _INT32
    return _int32(h)


@lru_cache(maxsize=4096)
def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's TopicPartition.hashCode(): 31 * (31 + partition) + topic.hashCode(), in 32-bit arithmetic."""
    return _int32(31 * _int32(31 + partition) + java_string_hash(topic))


def executor_loads(weights: Mapping[PartitionKey, float], scaleout: int, rule: PartitionAssignment) -> list[float]:
    """Load of each of `scaleout` executors (sum of its partitions' weights) under `rule`."""
    return _Layout(weights, rule).loads(scaleout)


def busiest_share(weights: Mapping[PartitionKey, float], scaleout: int, rule: PartitionAssignment) -> float:
    """The busiest executor's share of the total load at `scaleout` (1 / scaleout when perfectly even)."""
    return busiest_shares(weights, [scaleout], rule)[0]


def busiest_shares(
    weights: Mapping[PartitionKey, float], scaleouts: Iterable[int], rule: PartitionAssignment
) -> list[float]:
    """`busiest_share` at each of `scaleouts`, the partitions read once (the capacity table asks for every one)."""
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("partition weights sum to zero")
    layout = _Layout(weights, rule)
    return [max(layout.loads(n)) / total for n in scaleouts]


class _Layout:
    """The partitions' weights (and under `kafka` their hashes) as `executor_loads` spreads them."""

    def __init__(self, weights: Mapping[PartitionKey, float], rule: PartitionAssignment) -> None:
        self.rule = rule
        self.longest_first = sorted(weights.values(), reverse=True) if rule != "kafka" else []
        if rule == "kafka":
            count = len(weights)
            self.hashes = np.fromiter((topic_partition_hash(t, p) for t, p in weights), dtype=np.int64, count=count)
            self.values = np.fromiter(weights.values(), dtype=float, count=count)

    def loads(self, scaleout: int) -> list[float]:
        if scaleout < 1:
            raise ValueError(f"scale-out {scaleout} is below 1")
        if self.rule == "kafka":
            # Each partition's preferred executor is floorMod(hash, n) in Spark's sorted executor list; numpy's % of
            # a negative int64 by a positive one is non-negative, as Java's floorMod.
            return [float(v) for v in np.bincount(self.hashes % scaleout, weights=self.values, minlength=scaleout)]
        loads = [0.0] * scaleout
        heap = [(0.0, i) for i in range(scaleout)]
        for weight in self.longest_first:  # each to the least-loaded executor
            load, i = heapq.heappop(heap)
            loads[i] = load + weight
            heapq.heappush(heap, (loads[i], i))
        return loads


def even_weights(partitions: int, topic: str = "") -> dict[PartitionKey, float]:
    """Equal weights for `partitions` partitions (what is assumed when only the count is known)."""
    return {(topic, p): 1.0 for p in range(partitions)}
