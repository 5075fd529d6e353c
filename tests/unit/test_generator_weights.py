"""Unit: the generator's partition choice — round-robin, or skewed by weights, exact to one record per partition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from daedalus_spark.workloads.generator import Generator
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line


@dataclass
class CountingSink:
    partitions: int
    sent: Counter[int] = field(default_factory=Counter)

    def send(self, partition: int, records: Sequence[str]) -> None:
        self.sent[partition] += len(records)

    def flush(self) -> None:
        return None


def generator(partitions: int, weights: Sequence[float]) -> Generator:
    pacer = Pacer(np.full(100, 1000.0))
    return Generator(PaceKeeper(pacer), CountingSink(partitions), wordcount_line, "t", weights=weights)


@pytest.mark.parametrize(
    ("weights", "batches", "expected"),
    [
        ([], [8], [2, 2, 2, 2]),
        ([4, 2, 1, 1], [8], [4, 2, 1, 1]),
        ([4, 2, 1, 1], [3, 5, 800], [404, 202, 101, 101]),
        ([1, 0, 1], [10], [5, 0, 5]),
        ([5, 3, 2, 2, 1, 1, 1, 1], [1600], [500, 300, 200, 200, 100, 100, 100, 100]),
    ],
    ids=["round-robin", "4-2-1-1", "in-steps", "a-zero-weight", "demo-skew"],
)
def test_records_go_to_the_partitions_in_the_weights_shares(
    weights: list[float], batches: list[int], expected: list[int]
) -> None:
    gen = generator(len(expected), weights)
    sent = Counter[int]()
    for count in batches:
        sent.update(gen._partitions(count))
    got = [sent[p] for p in range(len(expected))]
    assert sum(got) == sum(batches)
    assert all(abs(g - e) <= 1 for g, e in zip(got, expected, strict=True)), got


@pytest.mark.parametrize("weights", [[1, 1], [1, -1, 1], [0, 0, 0]], ids=["too-few", "negative", "all-zero"])
def test_bad_weights_are_refused_naming_them(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="partition weights"):
        generator(3, weights)._partitions(5)
