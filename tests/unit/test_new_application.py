"""The job changing under the controller: a driver restart (a new application) and executors lost by themselves."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.losses import LossWatch
from daedalus_spark.analyze.recovery_measurement import PendingRecovery
from daedalus_spark.analyze.restart import ApplicationWatch
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation, Reason
from tests.unit.test_controller import CONFIG, window

RESTART_WITHIN_S = 180.0


def seen(time_s: float, uptime_s: float) -> Observation:
    return Observation.of(
        time_s=time_s, workload_per_s=10.0, executors={"1": ([10.0] * 5, [0.5] * 5)}, uptime_s=uptime_s
    )


@pytest.mark.parametrize(
    ("uptimes", "last_rescale_s", "expected"),
    [
        pytest.param([(1000, 500), (1060, 560)], None, False, id="uptime-grows-same-app"),
        pytest.param([(1000, 3600), (1060, 3600)], None, False, id="uptime-capped-same-app"),
        pytest.param([(1000, 1e9), (1060, 1e9)], None, False, id="uptime-unknown-same-app"),
        pytest.param([(1000, 500), (1060, 558)], None, False, id="sampling-jitter-same-app"),
        pytest.param([(1000, 500), (1060, 20)], None, True, id="uptime-falls-new-app"),
        pytest.param([(1000, 500), (1060, 20)], 1010.0, False, id="restarted-by-our-rescale"),
        pytest.param([(1300, 500), (1360, 20)], 1000.0, True, id="restarted-long-after-our-rescale"),
        pytest.param([(1060, 20)], None, False, id="first-look"),
    ],
)
def test_new_application(uptimes: list[tuple[float, float]], last_rescale_s: float | None, expected: bool) -> None:
    watch = ApplicationWatch()
    answers = [
        watch.new_application(seen(t, u), last_rescale_s=last_rescale_s, restart_within_s=RESTART_WITHIN_S)
        for t, u in uptimes
    ]
    assert answers[-1] is expected and not any(answers[:-1])


def test_a_new_application_drops_the_recovery_and_cooldown_and_keeps_the_capacity() -> None:
    rng = np.random.default_rng(0)
    controller = Controller(CONFIG)
    for k in range(5):
        controller.tick(window(60.0 * (k + 1), 1000.0, 4, rng=rng, uptime_s=10_000.0 + 60 * k), 60.0 * (k + 1))
    k = controller.knowledge
    k.last_rescale_s = 50.0  # a rescale sent to the old driver, its recovery still measured
    k.recovery.start(PendingRecovery(50.0, "out", 4, 5, predicted_recovery_s=120.0, downtime_used_s=30.0))
    regressions = {e: r.n for e, r in k.capacity.regressions.items()}

    decision = controller.tick(window(360.0, 1000.0, 4, rng=rng, uptime_s=15.0), 360.0)

    assert k.recovery.pending is None, "the restart is not timed as the recovery of the old application's rescale"
    assert k.last_rescale_s is None, "no cool-down from a rescale of the old application"
    assert decision.reason is Reason.SKIP_WARMUP and not decision.rescale, "the new application warms up first"
    assert {e: r.n for e, r in k.capacity.regressions.items()} == regressions, "capacity per executor kept"
    assert not k.recoveries


@pytest.mark.parametrize(
    ("counts", "our_target", "holds"),
    [
        pytest.param([2, 1], None, [False, True], id="lost-one-no-rescale-of-ours"),
        pytest.param([2, 1], 1, [False, False], id="our-scale-in-to-1"),
        pytest.param([5, 4], 3, [False, False], id="our-scale-in-on-its-way-to-3"),
        pytest.param([4, 3], 4, [False, True], id="lost-one-below-our-target"),
        pytest.param([2, 1, 1], None, [False, True, False], id="the-next-tick-at-the-lower-count-decides"),
        pytest.param([1, 2], None, [False, False], id="count-grew"),
    ],
)
def test_executor_loss_holds_one_tick(counts: list[int], our_target: int | None, holds: list[bool]) -> None:
    watch = LossWatch()
    answers = [watch.lost(n, our_target=our_target) for n in counts]
    assert [bool(a) for a in answers] == holds
    assert all("executors lost" in a for a in answers if a)
