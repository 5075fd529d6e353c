"""The rescale budget value: its tokens from the rescales, the rescales a plan may make over a horizon, the wait for a
whole token, and what tune allows over its windows, as tables computed by hand."""

import math

import pytest

from daedalus_spark.plan.budget import RescaleBudget, rescale_tokens


@pytest.mark.parametrize(
    ("tokens", "per_hour", "horizon_s", "allowed"),
    [
        pytest.param(math.inf, 3.0, 900, None, id="no-bucket"),
        pytest.param(2.0, 0.0, 900, None, id="budget-off"),
        pytest.param(0.2, 3.0, 900, 0, id="refill-short-of-one"),  # 0.2 + 3 x 900 / 3600 = 0.95
        pytest.param(0.25, 3.0, 900, 1, id="refill-makes-one"),  # 0.25 + 0.75 = 1, not 0.999...
        pytest.param(-2.0, 3.0, 900, 0, id="debt"),
        pytest.param(3.0, 3.0, 1200, 4, id="full-bucket-and-refill"),
        pytest.param(1.5, 6.0, 0, 1, id="no-horizon-whole-tokens-only"),
    ],
)
def test_allowance(tokens: float, per_hour: float, horizon_s: float, allowed: int | None) -> None:
    assert RescaleBudget(per_hour, tokens).allowance(horizon_s) == allowed


@pytest.mark.parametrize(
    ("tokens", "per_hour", "wait_s"),
    [
        pytest.param(0.0, 3.0, 1200.0, id="empty-a-third-of-an-hour"),  # 1 token / (3 per 3600 s)
        pytest.param(0.75, 3.0, 300.0, id="three-quarters"),
        pytest.param(-1.0, 2.0, 3600.0, id="in-debt-two-tokens-short"),
        pytest.param(1.0, 3.0, 0.0, id="a-whole-token"),
        pytest.param(2.5, 3.0, 0.0, id="more-than-one"),
        pytest.param(-4.0, 0.0, 0.0, id="budget-off-never-waits"),
        pytest.param(math.inf, 0.0, 0.0, id="off-infinite"),
    ],
)
def test_wait_for_a_token(tokens: float, per_hour: float, wait_s: float) -> None:
    budget = RescaleBudget(per_hour, tokens)
    assert budget.wait_s() == pytest.approx(wait_s, abs=1e-9)
    assert budget.has_token is (wait_s == 0.0)


@pytest.mark.parametrize(
    ("times", "now", "since", "tokens"),
    [
        pytest.param([], 1200.0, 0.0, 1.0, id="earned-from-empty"),  # 3/h for 20 min
        pytest.param([], 7200.0, 0.0, 3.0, id="full-at-most-the-rate"),
        pytest.param([1200.0], 1200.0, 0.0, 0.0, id="spent-as-soon-as-earned"),
        pytest.param([0.0, 0.0], 600.0, 0.0, -1.5, id="in-debt-then-refilling"),  # -2 + 0.5
        pytest.param([], 0.0, None, 3.0, id="full-without-a-start"),
    ],
)
def test_the_bucket_at_a_time(times: list[float], now: float, since: float | None, tokens: float) -> None:
    budget = RescaleBudget.at(times, now, per_hour=3.0, since_s=since)
    assert (budget.per_hour, budget.tokens) == (3.0, pytest.approx(tokens))
    assert budget.tokens == rescale_tokens(times, now, per_hour=3.0, since_s=since)


def test_no_budget_has_infinite_tokens() -> None:
    budget = RescaleBudget.at([0.0] * 50, 10.0, per_hour=0.0, since_s=0.0)
    assert budget == RescaleBudget() and not budget.limited and budget.has_token


@pytest.mark.parametrize(
    ("per_hour", "hours", "buckets", "allowed"),
    [
        pytest.param(3.0, 2.0, 1, 9.0, id="one-window-full-bucket-and-two-hours"),
        pytest.param(3.0, 2.0, 4, 18.0, id="four-windows-each-a-full-bucket"),
        pytest.param(0.5, 6.0, 2, 4.0, id="slow-rate"),
        pytest.param(0.0, 6.0, 2, math.inf, id="no-budget"),
    ],
)
def test_what_tune_allows_over_its_windows(per_hour: float, hours: float, buckets: int, allowed: float) -> None:
    assert RescaleBudget(per_hour).allowed_over(hours=hours, fresh_buckets=buckets) == allowed
