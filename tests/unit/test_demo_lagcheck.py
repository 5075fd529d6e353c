"""Unit: the demo's lag check — exporter's lag against the broker's, within one batch's records."""

from __future__ import annotations

import pytest

from daedalus_spark.demo.lagcheck import BrokerReadings, LagCheck, LagSample
from daedalus_spark.demo.summary import lag_check_line
from daedalus_spark.kafkacluster.offsets import BrokerOffsets


@pytest.mark.parametrize(
    ("exported", "broker", "batch", "trigger", "within"),
    [
        (1000.0, 1000.0, 500.0, 0.0, True),
        (1500.0, 1000.0, 500.0, 0.0, True),
        (1501.0, 1000.0, 500.0, 0.0, False),
        (0.0, 300.0, 0.0, 0.0, False),  # nothing produced and no batch in the window: the bound is one record
        (0.0, 1.0, 0.0, 0.0, True),
        (5000.0, 3000.0, 0.0, 2000.0, True),  # a stall: no batch, 2,000 records a trigger interval brings
        (5001.0, 3000.0, 0.0, 2000.0, False),
        (1800.0, 1000.0, 800.0, 400.0, True),  # batches larger than a trigger's records: theirs is the bound
    ],
    ids=["equal", "one-batch-off", "past-one-batch", "nothing-yet", "one-record", "stall", "past-stall", "backlog"],
)
def test_a_sample_is_within_one_batchs_records(
    exported: float, broker: float, batch: float, trigger: float, within: bool
) -> None:
    assert LagSample(0.0, exported, broker, batch, trigger).within is within


def test_the_summary_counts_samples_within_and_gives_the_worst_gap_in_records() -> None:
    check = LagCheck("http://127.0.0.1:1", BrokerOffsets("127.0.0.1:1"), "t", "g")
    check.samples = [LagSample(0, 100, 100, 50), LagSample(5, 200, 100, 50), LagSample(10, 130, 100, 50)]
    check.missing = {"exported lag": 1}
    assert check.summary() == {
        "samples": 3,
        "within_one_batch": 2,
        "missing": 1,
        "missing_because": {"exported lag": 1},
        "worst_gap_records": 100,
        "worst_gap_batch_records": 50,
        "outside": [{"t_s": 5.0, "exported": 200, "broker": 100, "batch": 50, "trigger": 0}],
    }
    assert "1 missing: 1 without exported lag" in format_summary_line(check.summary())


def test_a_gap_during_a_stall_is_records_not_thousands_of_batches() -> None:
    """No batch and no record produced in the window: the gap is reported in records beside a bound of 1 record."""
    check = LagCheck("http://127.0.0.1:1", BrokerOffsets("127.0.0.1:1"), "t", "g")
    check.samples = [LagSample(0, 9000, 524, 0), LagSample(5, 100, 100, 4000)]
    summary = check.summary()
    assert (summary["worst_gap_records"], summary["worst_gap_batch_records"]) == (8476, 1)
    line = format_summary_line(summary)
    assert "worst 8,476 records apart, when one batch was 1 records" in line
    assert "batches;" not in line


def format_summary_line(check: dict[str, object]) -> str:
    return "\n".join(lag_check_line(check))


@pytest.mark.parametrize(
    ("t_s", "expected"),
    [
        (100.0, 1000.0),
        (100.5, 1500.0),  # between a reading and the next, after a batch committed: halfway
        (101.0, 2000.0),
        (99.0, None),  # before the first reading kept
        (101.5, None),  # after the last: not guessed
    ],
    ids=["on-a-reading", "interpolated", "last-reading", "too-old", "too-new"],
)
def test_the_broker_lag_at_a_scrapes_time_is_interpolated_between_readings(t_s: float, expected: float | None) -> None:
    readings = BrokerReadings()
    readings.add(100.0, 1000.0)
    readings.add(101.0, 2000.0)
    assert readings.at(t_s) == expected


def test_broker_readings_keep_the_last_two_minutes() -> None:
    readings = BrokerReadings(keep_s=120.0)
    for t in range(0, 300):
        readings.add(float(t), float(t))
    assert readings.times_s[0] == 179.0 and readings.at(200.5) == 200.5
