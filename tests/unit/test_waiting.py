"""The one polling loop: returns when the condition holds, names what it waited for, stops when its target died."""

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.waiting import retrying, wait_until


def _clocked():
    clock = FakeClock()
    return clock, {"monotonic": clock.now, "sleep": clock.advance}


def test_returns_once_the_condition_holds_polling_at_the_interval() -> None:
    clock, time_fns = _clocked()
    wait_until(lambda: clock.now() >= 1.0, "one second", 10.0, interval_s=0.25, **time_fns)
    assert clock.now() == 1.0


def test_times_out_naming_what_it_waited_for() -> None:
    clock, time_fns = _clocked()
    with pytest.raises(TimeoutError, match="after 3 s waiting for the master"):
        wait_until(lambda: False, "the master", 3.0, **time_fns)
    assert 3.0 < clock.now() <= 3.2 + 1e-9


def test_a_dead_process_ends_the_wait_at_once() -> None:
    clock, time_fns = _clocked()

    def died() -> None:
        raise RuntimeError("prometheus exited with 1")

    with pytest.raises(RuntimeError, match="exited"):
        wait_until(lambda: False, "prometheus", 60.0, still_alive=died, **time_fns)
    assert clock.now() == 0.0


class Flaky:
    """Fails with `errors` in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors, self.calls = list(errors), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "answer"


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, OSError)


def test_retry_rides_out_transient_errors_with_doubling_waits() -> None:
    sleeps: list[float] = []
    call = Flaky(OSError("reset"), OSError("reset"))
    assert retrying(3, 0.5, _transient, sleep=sleeps.append)(call) == "answer"
    assert call.calls == 3 and sleeps == [0.5, 1.0]


def test_retry_raises_the_last_error_after_the_attempts() -> None:
    sleeps: list[float] = []
    call = Flaky(OSError("one"), OSError("two"), OSError("three"), OSError("four"))
    with pytest.raises(OSError, match="four"):
        retrying(4, 1.0, _transient, sleep=sleeps.append)(call)
    assert sleeps == [1.0, 2.0, 4.0]


def test_retry_raises_a_refusal_at_once() -> None:
    sleeps: list[float] = []
    call = Flaky(PermissionError("401"), OSError("never reached"))
    with pytest.raises(PermissionError):
        retrying(3, 0.5, lambda exc: not isinstance(exc, PermissionError), sleep=sleeps.append)(call)
    assert call.calls == 1 and sleeps == []
