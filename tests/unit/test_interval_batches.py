"""The forecast intervals' offsets, moved by a burst of buckets, equal those of an oracle that judges every issued
bound one (forecast, step) pair at a time, each by the gain over its delay (1 + the forecasts issued after it):
random histories with forecasts issued at irregular steps (overlapping ones too), buckets arriving in bursts of every
length, and bounds withheld until enough errors matured."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.forecast.intervals import _TRACKING_GAIN, HorizonErrors


@pytest.mark.parametrize("seed", range(40))
def test_a_burst_moves_each_step_once_per_bound_it_judged(seed: int) -> None:
    rng = np.random.default_rng(seed)
    usual = int(rng.choice([2, 3, 6]))  # buckets a tick brings (6: the default's 60-s tick), now and then another
    steps = int(rng.choice([6, 12, 30])) if usual < 6 else int(rng.choice([12, 90]))
    level = float(rng.choice([0.5, 0.9]))
    errors = HorizonErrors("x", steps, level)
    expected = np.zeros(steps)
    first, judged, remembered = 0, 0, 0
    number: dict[int, int] = {}  # each open forecast's first bucket: how many were remembered before it
    for _ in range(150):
        stride = usual if rng.random() < 0.95 else int(rng.integers(1, 8))
        actual = rng.normal(100.0, 10.0, stride) * rng.choice([1.0, 1e3])
        for _, start, values, issued in errors.open:  # the oracle, one pair at a time, oldest forecast first
            for t in range(max(first, start), min(first + stride, start + len(values))):
                if issued is not None:
                    missed = actual[t - first] - values[t - start] > issued[t - start]
                    gain = _TRACKING_GAIN / (remembered - number[start])  # 1 + the forecasts issued since
                    expected[t - start] += gain * (float(missed) - (1.0 - level))
                    judged += 1
        errors.observe(first, actual)
        np.testing.assert_array_equal(errors.offsets, expected)
        first += stride
        # a forecast from the next bucket on, sometimes two (another start a step later) whose steps overlap
        for start in [first] if rng.random() < 0.97 else [first, first + 1]:
            length = steps if rng.random() < 0.9 else int(rng.integers(1, steps + 1))
            errors.remember(start, rng.normal(100.0, 5.0, length))
            number[start], remembered = remembered, remembered + 1
    assert judged >= 100, "bounds were issued and judged"
