"""Oracle: the forecaster's one-sort column quantiles equal numpy's nanquantile to the last bit."""

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import column_quantiles


@pytest.mark.parametrize("q", [0.0, 0.05, 0.5, 0.8, 0.9, 0.95, 0.975, 1.0])
@pytest.mark.parametrize("seed", range(20))
def test_equals_numpy_nanquantile_bit_for_bit(q, seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 40)), int(rng.integers(1, 95))
    values = rng.normal(0, 1000, (rows, cols))
    values[rng.random((rows, cols)) < rng.uniform(0, 0.7)] = np.nan  # maturing rows: NaN tails and holes
    values[0] = rng.normal(0, 1000, cols)  # every column holds at least one error
    if seed % 4 == 0:
        values = np.round(values, -2)  # ties
    np.testing.assert_array_equal(column_quantiles(values, q), np.nanquantile(values, q, axis=0))


def test_one_value_per_column_is_that_value():
    values = np.array([[1.0, np.nan], [np.nan, -2.0]])
    np.testing.assert_array_equal(column_quantiles(values, 0.9), [1.0, -2.0])
