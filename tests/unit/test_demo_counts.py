"""The demo's exactly-once check: words appended to the local log against the final counts of the files sink."""

from pathlib import Path

import pytest

from daedalus_spark.demo.counts import final_counts, words_in_log
from daedalus_spark.workloads.locallog import LocalLog


@pytest.mark.parametrize(
    ("batches", "expected"),
    [
        pytest.param([(0, [("a", 1), ("b", 2)]), (1, [("a", 3)])], {"a": 3, "b": 2}, id="later-batch-updates"),
        pytest.param([(1, [("a", 3)]), (0, [("a", 1)])], {"a": 3}, id="batches-read-out-of-order"),
        pytest.param([(0, [])], {}, id="empty-batch"),
    ],
)
def test_final_counts_are_the_last_update_of_each_word(batches, expected):
    assert final_counts(batches) == expected


def test_words_in_log_split_like_wordcount(tmp_path: Path):
    log = LocalLog(tmp_path)
    log.create_topic("t", 2)
    log.append("t", 0, ["a b  c", " d "])
    log.append("t", 1, ["", "e\tf"])
    assert words_in_log(log, "t") == (4, 6)
