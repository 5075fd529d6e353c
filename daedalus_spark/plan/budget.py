"""Plan: the rescale budget (controller.max_rescales_per_hour) as a token bucket over the rescales that changed the
job; cost_aware holds a scale-in without a whole token, horizon plans with the tokens and their refill."""

from __future__ import annotations

import math
from collections.abc import Iterable


def rescale_tokens(
    rescale_times_s: Iterable[float], now_s: float, *, per_hour: float, since_s: float | None = None
) -> float:
    """The rescale budget's token bucket at `now_s`: refilled at `per_hour` per hour up to full (`per_hour` tokens),
    one token taken per rescale (possibly into debt: scale-outs are never held). It fills from empty at `since_s`,
    the oldest tick remembered, so that a fresh controller earns its budget like the rate says (a full bucket at
    start let 3-h runs make 12 rescales against a budget of 9), and is full from the start without it."""
    if per_hour <= 0:
        return math.inf
    rate_per_s = per_hour / 3600.0
    tokens, last = (per_hour, None) if since_s is None else (0.0, since_s)
    for t in sorted(rescale_times_s):
        if last is not None:
            tokens = min(per_hour, tokens + rate_per_s * (t - last))
        tokens, last = tokens - 1.0, t
    return tokens if last is None else min(per_hour, tokens + rate_per_s * max(0.0, now_s - last))
