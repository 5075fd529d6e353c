"""The wall clock steps by an hour between two ticks (injected clock): windows stay bounded, no negative interval."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from daedalus_spark.controller import Controller
from daedalus_spark.domain import Reason
from daedalus_spark.loop import Loop, window_start
from daedalus_spark.testing import CONFIG, Recorder, ScriptedActuator, ScriptedMonitor

INTERVAL_S = CONFIG.controller.loop_interval_s
HOUR_S = 3600.0


@dataclass
class SteppingClock:
    """A wall clock that can be set anywhere, backwards too (FakeClock refuses that on purpose)."""

    now_s: float

    def now(self) -> float:
        return self.now_s


@pytest.mark.parametrize(
    ("now_s", "previous_end_s", "expected"),
    [
        pytest.param(1000.0, None, 1000.0 - INTERVAL_S, id="first-window-one-interval"),
        pytest.param(1000.0, 1000.0 - INTERVAL_S, 1000.0 - INTERVAL_S, id="continues-at-previous-end"),
        pytest.param(1000.0 + HOUR_S, 1000.0, 1000.0 + HOUR_S - 5 * INTERVAL_S, id="forward-hour-capped"),
        pytest.param(1000.0 - HOUR_S, 1000.0, 1000.0 - HOUR_S - INTERVAL_S, id="back-hour-one-interval"),
        pytest.param(1000.0, 1000.0, 1000.0 - INTERVAL_S, id="same-time-one-interval"),
    ],
)
def test_window_start(now_s: float, previous_end_s: float | None, expected: float) -> None:
    assert window_start(now_s, previous_end_s, INTERVAL_S, 5) == expected


@pytest.mark.parametrize("step_s", [-HOUR_S, HOUR_S], ids=["back-an-hour", "forward-an-hour"])
def test_loop_survives_a_clock_step(step_s: float) -> None:
    clock = SteppingClock(100_000.0)
    monitor, actuator, recorder = ScriptedMonitor(), ScriptedActuator(), Recorder()
    loop = Loop(Controller(CONFIG), monitor, actuator, None, clock, [recorder])
    # numpy's divide-by-zero and invalid-value warnings are errors: a negative or zero interval would show here
    with np.errstate(divide="raise", invalid="raise"), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for tick in range(12 + round(HOUR_S / INTERVAL_S) + 20):
            clock.now_s += INTERVAL_S + (step_s if tick == 12 else 0.0)
            loop.step()

    before, after = recorder.results[:12], recorder.results[12:]
    reached_s = before[-1].time_s
    assert any(r.actuation is not None for r in before), "the overloaded job was scaled out before the step"
    for start_s, end_s in monitor.windows:
        assert 0 < end_s - start_s <= loop.max_window_intervals * INTERVAL_S, (start_s, end_s)
    for r in after:
        assert r.decision.reason.value, "every tick has a reason"
        for key, value in r.decision.evidence.fields().items():
            assert not (isinstance(value, float) and math.isnan(value)), (r.time_s, key)
        if r.time_s <= reached_s:
            # behind the time it had reached, what it learned (executors' start, the last rescale) is stamped in its
            # future: it holds (capacity not settled, or in cool-down), it never rescales
            assert r.actuation is None and r.decision.reason in (Reason.SKIP_MISSING_DATA, Reason.COOLDOWN), r.decision
    # the loop keeps deciding: the overloaded job is scaled out again once the step is behind it
    assert any(r.actuation is not None for r in after[-10:]), "scaled out again after the step"
