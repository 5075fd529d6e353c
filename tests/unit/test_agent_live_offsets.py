"""The agent's live end offsets when the broker does not answer: a scrape is held at most the reader's bound, the
topic's lag is left out (unknown, never 0 nor the last batch's), and a monitor window whose lag series ended
before its last sample is refused, saying why."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import pytest

from daedalus_spark.agent.queries import BoundedOffsets, OffsetsUnavailable, QueryStats, offsets_by_partition
from daedalus_spark.monitor.assemble import Window, build_observation
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.waiting import wait_until
from tests.unit.query_results import GRID, results, series


class SlowReader:
    """End offsets that come only when released; counts the reads started."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = 0
        self.fail = False

    def __call__(self) -> Mapping[int, int]:
        self.started += 1
        if not self.release.wait(30):
            raise TimeoutError("never released")
        if self.fail:
            raise ConnectionError("broker down")
        return {0: 100, 1: 50}


def test_a_read_that_hangs_holds_the_caller_at_most_the_bound_and_reads_do_not_pile_up() -> None:
    reader = SlowReader()
    bounded = BoundedOffsets(reader, "end offsets of topic 'words'", wait_s=0.2)
    for _ in range(3):
        t0 = time.monotonic()
        with pytest.raises(OffsetsUnavailable, match=r"not read within 0\.2 s"):
            bounded()
        assert time.monotonic() - t0 < 2.0
    assert reader.started == 1 and bounded.failures == 3  # the scrapes waited on the one read under way
    reader.release.set()
    pending = bounded._pending
    assert pending is not None
    wait_until(pending.done, "the hung read to finish once released", 30, interval_s=0.05)
    assert bounded() == {0: 100, 1: 50}  # the hung read came when nobody waited: a fresh read, not its result
    assert reader.started == 2


def test_a_failing_read_says_why() -> None:
    reader = SlowReader()
    reader.release.set()
    reader.fail = True
    bounded = BoundedOffsets(reader, "end offsets of topic 'words'", wait_s=5)
    with pytest.raises(OffsetsUnavailable, match="unreadable: ConnectionError: broker down"):
        bounded()
    assert bounded.last_error.endswith("broker down")


def stats(committed: dict[tuple[str, str], int]) -> QueryStats:
    return QueryStats("q", 3, 10, 1.0, 1.0, 0.5, committed, reported_latest={k: v + 7 for k, v in committed.items()})


def test_a_topic_whose_live_reader_fails_has_no_lag_not_the_batchs_nor_zero() -> None:
    def down() -> Mapping[int, int]:
        raise OffsetsUnavailable("broker down")

    q = stats({("words", "0"): 40, ("words", "1"): 50, ("other", "0"): 5})
    out = offsets_by_partition(q, {"words": down, "other": lambda: {0: 9}})
    assert out == {("other", "0"): (9, 5)}


def test_a_window_whose_lag_series_ended_is_refused_saying_why() -> None:
    ended = results(lag=[series(dict.fromkeys(GRID[:-3], 4.0))])  # the agent stopped exporting it 3 s ago
    with pytest.raises(MonitorError, match=r"consumer lag has no sample at 110 \(its last at 107\)") as err:
        build_observation(ended, Window(100.0, 110.0, 1.0), executor_label="executor_id")
    assert err.value.kind == "empty"
