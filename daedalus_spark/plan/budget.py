"""Plan: the rescale budget (controller.max_rescales_per_hour) as one value — a token bucket over the rescales that
changed the job, built once per tick; cost_aware holds a scale-in without a whole token, horizon plans with the
tokens and their refill, tune judges a candidate's rescales against what the bucket allows."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from daedalus_spark.config import RESCALE_BUDGET_WINDOW_S


@dataclass(frozen=True)
class RescaleBudget:
    """`per_hour` tokens an hour, at most `per_hour` in the bucket, `tokens` in it now (below 0: in debt, since
    scale-outs never wait). `per_hour` 0 is no budget: every rescale allowed, with infinite tokens."""

    per_hour: float = 0.0
    tokens: float = math.inf

    @classmethod
    def at(
        cls, rescale_times_s: Iterable[float], now_s: float, *, per_hour: float, since_s: float | None = None
    ) -> RescaleBudget:
        """The bucket at `now_s` after the rescales at `rescale_times_s` (rescale_tokens)."""
        return cls(per_hour, rescale_tokens(rescale_times_s, now_s, per_hour=per_hour, since_s=since_s))

    @property
    def limited(self) -> bool:
        return self.per_hour > 0

    @property
    def has_token(self) -> bool:
        """A whole token to spend now (always, without a budget)."""
        return not self.limited or self.tokens >= 1.0

    @property
    def counted(self) -> bool:
        """A budget whose tokens are counted (not off, and not infinite)."""
        return self.limited and not math.isinf(self.tokens)

    @property
    def seconds_per_token(self) -> float:
        """How long the bucket takes to earn one token (inf without a budget)."""
        return RESCALE_BUDGET_WINDOW_S / self.per_hour if self.limited else math.inf

    def wait_s(self) -> float:
        """Seconds until the bucket holds a whole token (0: it holds one now, or there is no budget)."""
        if self.has_token:
            return 0.0
        return (1.0 - self.tokens) / self.per_hour * RESCALE_BUDGET_WINDOW_S

    def allowance(self, horizon_s: float) -> int | None:
        """Rescales a plan may make over `horizon_s`: the tokens now plus the refill (None: no budget, or tokens not
        counted)."""
        if not self.counted:
            return None
        return max(0, math.floor(self.tokens + self.per_hour * horizon_s / RESCALE_BUDGET_WINDOW_S + 1e-9))

    def allowed_over(self, *, hours: float, fresh_buckets: int) -> float:
        """The most rescales over `hours` split into `fresh_buckets` stretches, each starting with at most a full
        bucket and refilled at the rate (inf: no budget)."""
        return self.per_hour * (hours + fresh_buckets) if self.limited else math.inf


def rescale_tokens(
    rescale_times_s: Iterable[float], now_s: float, *, per_hour: float, since_s: float | None = None
) -> float:
    """The rescale budget's token bucket at `now_s`: refilled at `per_hour` per hour up to full (`per_hour` tokens),
    one token taken per rescale (possibly into debt: scale-outs are never held). It fills from empty at `since_s`,
    the oldest tick remembered, so that a fresh controller earns its budget like the rate says (a full bucket at
    start let 3-h runs make 12 rescales against a budget of 9), and is full from the start without it."""
    if per_hour <= 0:
        return math.inf
    rate_per_s = per_hour / RESCALE_BUDGET_WINDOW_S
    tokens, last = (per_hour, None) if since_s is None else (0.0, since_s)
    for t in sorted(rescale_times_s):
        if last is not None:
            tokens = min(per_hour, tokens + rate_per_s * (t - last))
        tokens, last = tokens - 1.0, t
    return tokens if last is None else min(per_hour, tokens + rate_per_s * max(0.0, now_s - last))
