"""The job changing under the controller: a driver restart (a new application) and executors lost by themselves."""

from __future__ import annotations

import numpy as np
import pytest

from daedalus_spark.analyze.losses import LossWatch
from daedalus_spark.analyze.recovery_measurement import PendingRecovery
from daedalus_spark.analyze.restart import ApplicationWatch
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation, Reason
from daedalus_spark.testing import CONFIG, window

RESTART_WITHIN_S = 180.0


def seen(time_s: float, uptime_s: float, application_id: str = "") -> Observation:
    return Observation.of(
        time_s=time_s,
        workload_per_s=10.0,
        executors={"1": ([10.0] * 5, [0.5] * 5)},
        uptime_s=uptime_s,
        application_id=application_id,
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
    assert bool(answers[-1]) is expected and not any(answers[:-1])


@pytest.mark.parametrize(
    ("stored_id", "seen_as", "last_rescale_s", "expected"),
    [
        pytest.param("", [(1000, 500, "app-1"), (1060, 560, "app-2")], None, True, id="id-changed-uptime-grew"),
        pytest.param("", [(1000, 500, "app-1"), (1060, 20, "app-2")], 1010.0, True, id="id-changed-after-our-rescale"),
        pytest.param("", [(1000, 500, "app-1"), (1060, 20, "app-1")], None, False, id="same-id-uptime-fell"),
        pytest.param("", [(1000, 500, "app-1"), (1060, 20, "")], None, True, id="id-unknown-now-uptime-decides"),
        pytest.param("", [(1000, 500, ""), (1060, 20, "app-2")], 1010.0, False, id="id-unknown-before-our-rescale"),
        pytest.param(
            "", [(1000, 500, "app-1"), (1030, 530, ""), (1060, 560, "app-2")], None, True, id="id-kept-over-a-gap"
        ),
        pytest.param("app-1", [(1060, 20, "app-2")], None, True, id="stored-id-first-tick-new"),
        pytest.param("app-1", [(1060, 20, "app-1")], None, False, id="stored-id-first-tick-same"),
        pytest.param("", [(1060, 20, "app-2")], None, False, id="first-look-with-id"),
    ],
)
def test_new_application_by_id(
    stored_id: str, seen_as: list[tuple[float, float, str]], last_rescale_s: float | None, expected: bool
) -> None:
    watch = ApplicationWatch(application_id=stored_id)
    answers = [
        watch.new_application(seen(t, u, a), last_rescale_s=last_rescale_s, restart_within_s=RESTART_WITHIN_S)
        for t, u, a in seen_as
    ]
    assert bool(answers[-1]) is expected and not any(answers[:-1])
    assert watch.application_id == next((a for _, _, a in reversed(seen_as) if a), stored_id)
    if expected and seen_as[-1][2]:
        assert "application id changed" in answers[-1]


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


HOLD_S = 40.0


def live(time_s: float, count: int, agent_target: int | None) -> Observation:
    """`count` executors 1..count, the agent asking for `agent_target`."""
    executors = {str(i): ([10.0] * 5, [0.5] * 5) for i in range(1, count + 1)}
    return Observation.of(time_s=time_s, workload_per_s=10.0, executors=executors, agent_target=agent_target)


@pytest.mark.parametrize(
    ("ticks", "our_target", "expected"),
    [
        # Without the agent's target: one tick.
        pytest.param([(0, 2, None), (10, 1, None)], None, ["", "hold"], id="lost-one-no-rescale-of-ours"),
        pytest.param([(0, 2, None), (10, 1, None)], 1, ["", ""], id="our-scale-in-to-1"),
        pytest.param([(0, 5, None), (10, 4, None)], 3, ["", ""], id="our-scale-in-on-its-way-to-3"),
        pytest.param([(0, 4, None), (10, 3, None)], 4, ["", "hold"], id="lost-one-below-our-target"),
        pytest.param(
            [(0, 2, None), (10, 1, None), (20, 1, None)], None, ["", "hold", ""], id="unknown-target-one-tick-only"
        ),
        pytest.param([(0, 1, None), (10, 2, None)], None, ["", ""], id="count-grew"),
        # With it: while replacements are pending, bounded by HOLD_S.
        pytest.param(
            [(0, 2, 2), (10, 1, 2), (20, 1, 2), (30, 1, 2)], 2, ["", "hold", "hold", "hold"], id="slow-replacement"
        ),
        pytest.param([(0, 2, 2), (10, 1, 2), (20, 2, 2), (30, 2, 2)], 2, ["", "hold", "", ""], id="replaced"),
        pytest.param(
            [(0, 2, 2), (10, 1, 2), (30, 1, 2), (50, 1, 2), (60, 1, 2), (70, 2, 2)],
            2,
            ["", "hold", "hold", "note", "note", ""],
            id="not-replaced-within-the-bound",
        ),
        pytest.param([(0, 2, 2), (10, 1, 2), (20, 1, 2)], None, ["", "hold", "hold"], id="we-applied-nothing"),
        pytest.param([(0, 3, 3), (10, 1, 3), (20, 2, 3)], 3, ["", "hold", "hold"], id="partly-replaced"),
        pytest.param([(0, 2, 3), (10, 1, 3)], 2, ["", ""], id="agent-target-not-ours"),
        pytest.param([(0, 4, 2), (10, 2, 2)], 2, ["", ""], id="our-scale-in"),
        pytest.param([(0, 2, 4), (10, 3, 4), (20, 3, 4)], 4, ["", "", ""], id="our-scale-out-on-its-way"),
        pytest.param([(0, 2, 4), (10, 3, 4), (20, 2, 4)], 4, ["", "", "hold"], id="lost-during-our-scale-out"),
        pytest.param([(0, 2, 2), (10, 1, 2), (5, 1, 2)], 2, ["", "hold", "hold"], id="clock-stepped-back"),
    ],
)
def test_executor_loss_holds_while_replacements_are_pending(
    ticks: list[tuple[float, int, int | None]], our_target: int | None, expected: list[str]
) -> None:
    watch = LossWatch()
    verdicts = [watch.lost(live(t, n, a), now_s=t, our_target=our_target, hold_s=HOLD_S) for t, n, a in ticks]
    assert ["hold" if v.hold else "note" if v.notes else "" for v in verdicts] == expected
    assert all(v.hold.startswith("executors lost: ") for v in verdicts if v.hold)


def test_the_hold_and_the_note_name_the_fault() -> None:
    watch = LossWatch()
    said = [watch.lost(live(t, n, 2), now_s=t, our_target=2, hold_s=HOLD_S) for t, n in [(0, 2), (10, 1), (22, 1)]]
    assert said[2].hold == (
        "executors lost: 2 -> 1 live (executor 2 gone), agent asking for 2; waiting for replacements (12 s of 40 s)"
    )
    note = watch.lost(live(50, 1, 2), now_s=50, our_target=2, hold_s=HOLD_S).notes
    assert note == (
        "executors lost: 2 -> 1 live (executor 2 gone), agent asking for 2; not replaced within 40 s: "
        "planning on the 1 live",
    )
