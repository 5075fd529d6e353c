"""The forecast intervals' offsets move in one batch only where that gives the same bits as one forecast after
another: random histories with forecasts issued at irregular steps (overlapping ones too), buckets arriving in bursts
of every length, and bounds withheld until enough errors matured."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import intervals
from daedalus_spark.analyze.forecast.intervals import HorizonErrors


def _state(h: HorizonErrors) -> tuple[bytes, bytes, list[tuple[int, int, bytes, bytes | None]]]:
    opened = [(row, start, v.tobytes(), None if m is None else m.tobytes()) for row, start, v, m in h.open]
    return h.errors.tobytes(), h.offsets.tobytes(), opened


@pytest.mark.parametrize("seed", range(40))
def test_one_batch_gives_the_bits_of_one_forecast_after_another(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    usual = int(rng.choice([2, 3, 6]))  # buckets a tick brings (6: the default's 60-s tick), now and then another
    # steps the 30 error rows can see mature (the default: 90 of 10 s at a 60-s tick), so that bounds are issued
    steps = int(rng.choice([6, 12, 30])) if usual < 6 else int(rng.choice([12, 90]))
    batched = HorizonErrors("x", steps, float(rng.choice([0.5, 0.9])))
    first, batches = 0, 0
    for _ in range(150):
        stride = usual if rng.random() < 0.95 else int(rng.integers(1, 8))
        actual = rng.normal(100.0, 10.0, stride) * rng.choice([1.0, 1e3])
        one_by_one = copy.deepcopy(batched)
        reached = _reached(batched, first, actual)
        batches += intervals._one_batch(reached) and sum(issued is not None for *_, issued in reached) >= 2
        batched.observe(first, actual)
        monkeypatch.setattr(intervals, "_one_batch", lambda reached: False)
        one_by_one.observe(first, actual)
        monkeypatch.undo()
        assert _state(batched) == _state(one_by_one)
        first += stride
        # a forecast from the next bucket on, sometimes two (another start a step later) whose steps overlap
        for start in [first] if rng.random() < 0.97 else [first, first + 1]:
            length = steps if rng.random() < 0.9 else int(rng.integers(1, steps + 1))
            batched.remember(start, rng.normal(100.0, 5.0, length))
    assert batches >= 10, "the batch path ran with several forecasts"


def _reached(
    h: HorizonErrors, first: int, actual: np.ndarray
) -> list[tuple[int, slice, np.ndarray, np.ndarray | None]]:
    out = []
    for row, start, values, issued in h.open:
        lo, hi = max(first, start), min(first + len(actual), start + len(values))
        if lo < hi:
            out.append((row, slice(lo - start, hi - start), np.zeros(hi - lo), issued))
    return out


@pytest.mark.parametrize(
    ("spans", "issued", "batch"),
    [
        pytest.param([(0, 6), (6, 12)], [True, True], True, id="disjoint"),
        pytest.param([(0, 6), (5, 11)], [True, False], False, id="overlapping"),
        pytest.param([(0, 1), (6, 12)], [True, True], False, id="a-single-step-among-several"),
        pytest.param([(0, 1), (6, 12)], [True, False], True, id="a-single-step-alone"),
    ],
)
def test_one_batch(spans: list[tuple[int, int]], issued: list[bool], batch: bool) -> None:
    reached = [
        (row, slice(a, b), np.zeros(b - a), np.zeros(12) if i else None)
        for row, ((a, b), i) in enumerate(zip(spans, issued, strict=True))
    ]
    assert intervals._one_batch(reached) is batch
