"""The topic's earlier load cycles the demo writes into Prometheus (demo/history.py): kafka-exporter's end offsets
as the generator produces the trace, cycle after cycle, ending where the demo's load begins."""

from __future__ import annotations

import re

import numpy as np
import pytest

from daedalus_spark.demo.history import OFFSET_SERIES, topic_history
from daedalus_spark.workloads.pacing import Pacer

LINE = re.compile(OFFSET_SERIES + r'\{topic="t",partition="(\d+)"\} (-?\d+) (\d+)$')
PACER = Pacer(np.array([100.0, 300.0, 200.0, 50.0]), compression=2.0, scale=1.5)  # a 2-s cycle: 975 records


def _samples(
    cycles: int, end_s: int, partitions: int = 3, end_offsets: list[int] | None = None
) -> dict[int, list[tuple[int, int]]]:
    lines = list(
        topic_history(PACER, topic="t", partitions=partitions, cycles=cycles, end_s=end_s, end_offsets=end_offsets)
    )
    assert lines[0] == f"# TYPE {OFFSET_SERIES} gauge" and lines[-1] == "# EOF"
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for line in lines[1:-1]:
        match = LINE.match(line)
        assert match, line
        by_partition.setdefault(int(match[1]), []).append((int(match[3]), int(match[2])))
    return by_partition


def test_the_partitions_hold_what_the_pacer_made_due_cycle_after_cycle() -> None:
    samples = _samples(cycles=3, end_s=1_000)
    assert sorted(samples) == [0, 1, 2]
    times = [t for t, _ in samples[0]]
    assert times == list(range(1_000 - 6, 1_000))  # three 2-s cycles, the last sample a second before the end
    for i, t in enumerate(times):
        cycle, into = divmod(i, 2)
        due = cycle * PACER.total + PACER.due(into)
        offsets = [samples[p][i][1] for p in range(3)]
        assert sum(offsets) == due, (t, offsets)
        assert max(offsets) - min(offsets) <= 1  # round-robin


def test_offsets_only_grow() -> None:
    for series in _samples(cycles=4, end_s=50).values():
        values = [v for _, v in series]
        assert values == sorted(values)


def test_the_history_ends_at_the_offsets_the_live_topic_goes_on_from() -> None:
    """The demo's warm-up lines are in the topic before the load begins: the history leads up to their offsets, so
    that no rate over the seam sees a counter reset; each partition grows as it does from 0."""
    end_offsets = [40, 39, 39]
    shifted = _samples(cycles=3, end_s=1_000, end_offsets=end_offsets)
    plain = _samples(cycles=3, end_s=1_000)
    records = 3 * PACER.total
    for p, end in enumerate(end_offsets):
        share = records // 3 + (1 if p < records % 3 else 0)  # where the plain series arrives at end_s
        assert [v for _, v in shifted[p]] == [v - share + end for _, v in plain[p]]


def test_end_offsets_need_one_per_partition() -> None:
    with pytest.raises(ValueError, match="end_offsets has 2 values for 3 partitions"):
        list(topic_history(PACER, topic="t", partitions=3, cycles=1, end_s=100, end_offsets=[1, 2]))


@pytest.mark.parametrize(
    ("partitions", "cycles", "step_s", "named"),
    [
        pytest.param(0, 3, 1, "partitions 0", id="no-partition"),
        pytest.param(8, 0, 1, "cycles 0", id="no-cycle"),
        pytest.param(8, 3, 0, "step_s 0", id="no-step"),
    ],
)
def test_bad_arguments_are_named(partitions: int, cycles: int, step_s: int, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        list(topic_history(PACER, topic="t", partitions=partitions, cycles=cycles, end_s=100, step_s=step_s))
