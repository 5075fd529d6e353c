"""The fit cache: a hit is the model a fit would have returned, bit for bit (and a copy); any other series or setting
misses; the LRU keeps at most its bound."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.forecast import FitCache, FitJob, run_fit
from daedalus_spark.analyze.forecast.fitcache import fit_key


def _series(seed: int = 0, n: int = 48) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    return 1000 + 200 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 20, n)


def _job(y: np.ndarray, **settings: int | bool) -> FitJob:
    return FitJob(y, **{"window_steps": 48, "seasonal_period_steps": 0, **settings})  # type: ignore[arg-type]


def test_a_hit_is_the_fitted_model_bit_for_bit_and_a_private_copy() -> None:
    cache = FitCache(4)
    job = _job(_series())
    fitted = run_fit(job)
    first = cache.fit(job)
    assert (cache.hits, cache.misses) == (0, 1)
    first.update(np.array([1100.0, 1150.0]))  # a forecaster updates its model in place...
    second = cache.fit(_job(_series()))  # ...which the next candidate's model must not see
    assert (cache.hits, cache.misses) == (1, 1)
    assert second is not first
    assert second.to_json() == fitted.to_json()  # type: ignore[union-attr]
    np.testing.assert_array_equal(second.predict_interval(30, 0.9)[1], fitted.predict_interval(30, 0.9)[1])  # type: ignore[union-attr]
    second.update(np.array([1100.0, 1150.0]))
    assert second.to_json() == first.to_json()  # type: ignore[union-attr]
    third = cache.fit(_job(_series()))  # a hit's model is updated in place too: the kept one stays as fitted
    assert third.to_json() == fitted.to_json()  # type: ignore[union-attr]
    assert (cache.hits, cache.misses) == (2, 1)


@pytest.mark.parametrize(
    ("other", "what"),
    [
        pytest.param(_job(_series(seed=1)), "series", id="another-series"),
        pytest.param(
            _job(np.concatenate([_series()[:-1], [np.nextafter(_series()[-1], np.inf)]])),
            "last bit",
            id="the-last-value-one-bit-higher",
        ),
        pytest.param(_job(_series()[1:]), "shorter", id="one-step-shorter"),
        pytest.param(_job(_series().astype(np.float32)), "dtype", id="same-values-as-float32"),
        pytest.param(_job(_series(), window_steps=40), "window", id="another-window"),
        pytest.param(_job(_series(), select_horizon_steps=6), "selection", id="selected-by-hold-out-wape"),
        pytest.param(_job(_series(), detect_season=True), "season", id="seasonality-detection-on"),
        pytest.param(_job(_series(), seasonal_period_steps=24), "period", id="a-seasonal-period"),
    ],
)
def test_any_other_series_or_setting_misses(other: FitJob, what: str) -> None:
    assert fit_key(other) != fit_key(_job(_series())), what
    cache = FitCache(4)
    cache.fit(_job(_series()))
    cache.fit(other)
    assert (cache.hits, cache.misses) == (0, 2)


def test_the_lru_keeps_at_most_its_bound_and_drops_the_least_recently_used() -> None:
    cache = FitCache(2)
    a, b, c = (_job(_series(seed=s)) for s in (1, 2, 3))
    cache.fit(a)
    cache.fit(b)
    cache.fit(a)  # a is now the most recently used
    cache.fit(c)  # drops b
    assert len(cache) == 2
    assert (cache.hits, cache.misses) == (1, 3)
    cache.fit(a)
    cache.fit(c)
    assert (cache.hits, cache.misses) == (3, 3)
    cache.fit(b)  # was dropped: fitted again
    assert (cache.hits, cache.misses, len(cache)) == (3, 4, 2)


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        FitCache(0)
