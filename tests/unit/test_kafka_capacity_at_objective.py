"""Unit: the capacity calibration's reading at the latency objective (benchmarks/spark_capacity.py --experiment kafka),
against a known batch line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from capacity_experiments.on_kafka import at_objective


def runs(*rates: tuple[int, float, float]) -> list[dict[str, Any]]:
    """One WordCount run per batch size, each `(executors, lines per batch, lines/s)` in it."""
    by_size: dict[float, list[dict[str, float]]] = {}
    for n, size, rate in rates:
        by_size.setdefault(size, []).append({"executors": n, "batch_rows": size, "records_per_s": rate})
    return [{"pipeline": "wordcount", "record_cost_rounds": 300, "rates": rows} for rows in by_size.values()]


def test_the_capacity_is_read_off_the_line_through_the_two_batch_sizes() -> None:
    # batches of 3 s + 0.5 ms per line: 10,000 lines in 8 s, 20,000 in 13 s; a 30-s objective allows back-to-back
    # batches of 15 s (a line waits for the running batch, then its own), which hold (15 - 3) / 0.0005 = 24,000 lines
    [row] = at_objective(runs((1, 10_000, 10_000 / 8.0), (1, 20_000, 20_000 / 13.0)), 1.0, 30.0)
    assert (row["fixed_s"], row["per_record_ms"]) == (pytest.approx(3.0), pytest.approx(0.5))
    assert row["at_objective_per_s"] == round(24_000 / 15.0)
    # a trigger longer than half the objective bounds the batches instead
    [row] = at_objective(runs((1, 10_000, 10_000 / 8.0), (1, 20_000, 20_000 / 13.0)), 20.0, 30.0)
    assert row["at_objective_per_s"] == round((20 - 3) / 0.0005 / 20.0)


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        ([(1, 10_000, 1_250.0)], []),
        ([(1, 10_000, 1_250.0), (2, 20_000, 2_500.0)], []),
        ([(1, 10_000, 1_000.0), (1, 20_000, 900.0)], [None]),
    ],
    ids=["one-size", "one-size-per-executor-count", "larger-batches-slower-per-line-no-cost-line"],
)
def test_no_capacity_is_read_without_a_batch_line(rates: list[tuple[int, float, float]], expected: list) -> None:
    assert [row["at_objective_per_s"] for row in at_objective(runs(*rates), 1.0, 30.0)] == expected
