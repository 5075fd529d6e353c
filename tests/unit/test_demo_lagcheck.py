"""Unit: the demo's lag check — exporter's lag against the broker's, within one batch's records."""

from __future__ import annotations

import pytest

from daedalus_spark.demo.lagcheck import LagCheck, LagSample
from daedalus_spark.kafkacluster.offsets import BrokerOffsets


@pytest.mark.parametrize(
    ("exported", "broker", "batch", "within"),
    [
        (1000.0, 1000.0, 500.0, True),
        (1500.0, 1000.0, 500.0, True),
        (1501.0, 1000.0, 500.0, False),
        (0.0, 300.0, 0.0, False),  # no batch in the window: the bound is one record, not zero
        (0.0, 1.0, 0.0, True),
    ],
    ids=["equal", "one-batch-off", "past-one-batch", "no-batch-yet", "one-record"],
)
def test_a_sample_is_within_one_batchs_records(exported: float, broker: float, batch: float, within: bool) -> None:
    assert LagSample(0.0, exported, broker, batch).within is within


def test_the_summary_counts_samples_within_and_the_worst_in_batches() -> None:
    check = LagCheck("http://127.0.0.1:1", BrokerOffsets("127.0.0.1:1"), "t", "g")
    check.samples = [LagSample(0, 100, 100, 50), LagSample(5, 200, 100, 50), LagSample(10, 130, 100, 50)]
    check.missing = 1
    assert check.summary() == {"samples": 3, "within_one_batch": 2, "missing": 1, "worst_in_batches": 2.0}
