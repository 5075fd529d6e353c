"""Oracle tests: the online statistics equal numpy's after every single update."""

import numpy as np
import pytest
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


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 50_000), st.floats(-1, 1)),
        min_size=3,
        max_size=30,
        unique_by=lambda p: round(p[0], 3),
    ),
    st.floats(0, 100_000),
    st.sampled_from([0.8, 0.9, 0.99]),
)
def test_the_lines_upper_confidence_bound_is_statsmodels_one_sided_interval(points, x, confidence):
    """Oracle: OLS's confidence interval of the mean at x, two-sided at 2c - 1, has the one-sided bound at c."""
    import statsmodels.api as sm

    xs = np.array([p[0] for p in points])
    ys = 1.0 + 2e-4 * xs + np.array([p[1] for p in points])
    if np.ptp(xs) < 1.0:
        return
    reg = OnlineRegression()
    reg.update_all(list(zip(xs.tolist(), ys.tolist(), strict=True)))
    fit = sm.OLS(ys, sm.add_constant(xs)).fit()
    upper = fit.get_prediction(np.array([[1.0, x]])).conf_int(alpha=2 * (1 - confidence))[0, 1]
    assert reg.mean_upper_bound(x, confidence) == pytest.approx(upper, rel=1e-6, abs=1e-6)


def test_the_bound_is_the_line_without_residuals_or_with_two_points():
    exact = OnlineRegression()
    exact.update_all([(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)])
    assert exact.mean_upper_bound(10.0, 0.9) == pytest.approx(21.0)
    two = OnlineRegression()
    two.update_all([(1.0, 3.0), (2.0, 7.0)])
    assert two.mean_upper_bound(10.0, 0.9) == pytest.approx(two.predict(10.0))
