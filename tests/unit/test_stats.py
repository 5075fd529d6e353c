"""Oracle tests: the online statistics equal numpy's after every single update."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from daedalus_spark.analyze.stats import OnlineRegression


@settings(max_examples=60)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1e5)), min_size=2, max_size=60))
def test_online_regression_matches_numpy_after_every_update(pairs):
    r = OnlineRegression()
    for i, (x, y) in enumerate(pairs, start=1):
        r.update(x, y)
        xs, ys = np.asarray(pairs[:i]).T
        np.testing.assert_allclose([r.mean_x, r.mean_y], [xs.mean(), ys.mean()], rtol=1e-9, atol=1e-6)
        np.testing.assert_allclose(r.variance_x(), xs.var(), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(r.covariance(), np.cov(xs, ys, ddof=0)[0, 1], rtol=1e-7, atol=1e-4)
        if xs.var() > 1e-6:
            slope, intercept = np.polyfit(xs, ys, 1)
            np.testing.assert_allclose([r.slope, r.intercept], [slope, intercept], rtol=1e-5, atol=1e-3)


def test_regression_without_spread_has_flat_slope():
    r = OnlineRegression()
    for _ in range(10):
        r.update(0.5, 100.0)
    assert r.slope == 0.0
    assert r.predict(1.0) == 100.0


def test_large_offsets_stay_numerically_stable():
    # The naive sum-of-squares formula loses all precision here; Welford must not.
    r = OnlineRegression()
    xs = 1e9 + np.array([4.0, 7.0, 13.0, 16.0])
    for x in xs:
        r.update(float(x), 2.0 * float(x))
    assert abs(r.variance_x(ddof=1) - 30.0) < 1e-6
    assert abs(r.slope - 2.0) < 1e-9
