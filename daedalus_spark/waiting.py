"""Edge support: the one bounded polling loop (processes and servers that start) and the one retry policy (requests)."""

from __future__ import annotations

import time
from collections.abc import Callable

import tenacity


def wait_until(
    condition: Callable[[], bool],
    what: str,
    timeout_s: float,
    *,
    interval_s: float = 0.2,
    still_alive: Callable[[], None] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll `condition` every `interval_s` until it holds. `still_alive` raises when what we wait on has died (no
    point waiting out the deadline); past `timeout_s`, a TimeoutError names `what`."""
    deadline = monotonic() + timeout_s
    while not condition():
        if still_alive is not None:
            still_alive()
        if monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        sleep(interval_s)


def retrying(
    attempts: int,
    backoff_s: float,
    transient: Callable[[BaseException], bool],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> tenacity.Retrying:
    """At most `attempts` calls; an error `transient` says may pass is retried after `backoff_s`, doubling with every
    further wait (0.5, 1, 2, ...); any other error, or the last attempt's, is raised as it is.

    tenacity, not urllib3's `Retry`: the agent's requests (urllib) and the Kubernetes client's calls (urllib3 under
    its own pool, errors as ApiException) share the one policy, around whatever call raises, with the sleep
    injectable (tests never wait). `Retry` lives inside a urllib3 pool, and waits nothing before its first retry.
    """
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=backoff_s, exp_base=2, min=0),
        retry=tenacity.retry_if_exception(transient),
        sleep=sleep,
        reraise=True,
    )
