"""Edge support: the one bounded polling loop, for waiting on processes and servers that start or change."""

from __future__ import annotations

import time
from collections.abc import Callable


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
