"""The one polling loop: returns when the condition holds, names what it waited for, stops when its target died."""

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.waiting import wait_until


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
