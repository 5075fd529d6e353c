"""The application id and the agent's target through the controller: the id kept in the knowledge (and read back
from old, new and damaged stores), a controller resumed after the driver restarted, a loss held until replaced."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from daedalus_spark.analyze.recovery_measurement import PendingRecovery
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation, Reason
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import InMemoryKnowledgeStore
from daedalus_spark.testing import CONFIG, window


def of(obs: Observation, application_id: str = "", agent_target: int | None = None) -> Observation:
    return replace(obs, application_id=application_id, agent_target=agent_target)


def ticked(application_id: str, ticks: int = 5, scaleout: int = 4) -> Controller:
    rng = np.random.default_rng(0)
    controller = Controller(CONFIG)
    for k in range(ticks):
        t = 60.0 * (k + 1)
        controller.tick(of(window(t, 1000.0, scaleout, rng=rng, uptime_s=10_000.0 + t), application_id), t)
    return controller


def test_the_application_id_is_kept_in_the_knowledge() -> None:
    controller = ticked("app-20261124183100-0001")
    store = InMemoryKnowledgeStore()
    controller.save(store)
    saved = store.load()
    assert saved is not None
    assert json.loads(saved.components["controller"])["application_id"] == "app-20261124183100-0001"
    assert Controller.resume(CONFIG, store).application.application_id == "app-20261124183100-0001"


def test_a_controller_resumed_after_the_driver_restarted_drops_the_old_applications_rescale(tmp_path: Path) -> None:
    controller = ticked("app-1")
    k = controller.knowledge
    k.last_rescale_s = 290.0  # a rescale sent to the old driver, its recovery still measured
    k.recovery.start(PendingRecovery(290.0, "out", 4, 5, predicted_recovery_s=120.0, downtime_used_s=30.0))
    store = SqliteKnowledgeStore(tmp_path / "k.sqlite")
    controller.save(store)

    resumed = Controller.resume(CONFIG, store, now_s=400.0)  # the controller restarted with the driver
    assert resumed.knowledge.recovery.pending is not None and resumed.knowledge.last_rescale_s == 290.0
    first = of(window(400.0, 1000.0, 4, rng=np.random.default_rng(1), uptime_s=30.0), "app-2")
    decision = resumed.tick(first, 400.0)

    assert resumed.knowledge.recovery.pending is None, "the restart is not timed as the old rescale's recovery"
    assert resumed.knowledge.last_rescale_s is None, "no cool-down from a rescale of the old application"
    assert decision.reason is Reason.SKIP_WARMUP
    assert resumed.knowledge.application_id == "app-2"


def test_a_driver_restart_right_after_our_rescale_is_a_new_application_by_its_id() -> None:
    controller = ticked("app-1")
    k = controller.knowledge
    k.last_rescale_s = 290.0  # the uptime alone would read the restart at ~300 as this rescale's
    k.recovery.start(PendingRecovery(290.0, "out", 4, 5, predicted_recovery_s=120.0, downtime_used_s=30.0))
    controller.tick(of(window(360.0, 1000.0, 4, rng=np.random.default_rng(1), uptime_s=55.0), "app-2"), 360.0)
    assert k.recovery.pending is None and k.last_rescale_s is None


def test_the_same_id_with_a_falling_uptime_keeps_the_rescale() -> None:
    controller = ticked("app-1")
    k = controller.knowledge
    k.last_rescale_s = 290.0
    controller.tick(of(window(360.0, 1000.0, 4, rng=np.random.default_rng(1), uptime_s=15.0), "app-1"), 360.0)
    assert k.last_rescale_s == 290.0


def _stored_controller(tmp_path: Path, change) -> Path:
    """A saved store whose controller component is rewritten by `change` (a dict -> dict)."""
    path = tmp_path / "k.sqlite"
    ticked("app-1").save(SqliteKnowledgeStore(path))
    with sqlite3.connect(path) as conn:
        raw = json.loads(conn.execute("SELECT json FROM component WHERE name = 'controller'").fetchone()[0])
        conn.execute("UPDATE component SET json = ? WHERE name = 'controller'", (json.dumps(change(raw)),))
    return path


@pytest.mark.parametrize(
    ("change", "expected", "damage"),
    [
        pytest.param(lambda raw: raw, "app-1", "", id="as-saved"),
        pytest.param(lambda raw: {"last_rescale_s": raw["last_rescale_s"]}, "", "", id="old-store-without-it"),
        pytest.param(
            lambda raw: {**raw, "application_id": 7}, "", "controller.application_id: expected a string", id="a-number"
        ),
        pytest.param(
            lambda raw: {**raw, "application_id": None}, "", "controller.application_id: expected a string", id="null"
        ),
        pytest.param(lambda raw: {**raw, "application_id": "a" * 201}, "", "at most 200 characters", id="too-long"),
        pytest.param(
            lambda raw: {**raw, "application_id": "app-1\n\x1b[2J"}, "", "holds control characters", id="control-chars"
        ),
    ],
)
def test_the_stored_application_id_is_checked(tmp_path: Path, caplog, change, expected: str, damage: str) -> None:
    store = SqliteKnowledgeStore(_stored_controller(tmp_path, change))
    controller = Controller.resume(CONFIG, store, now_s=400.0)
    assert controller.application.application_id == controller.knowledge.application_id == expected
    if damage:
        assert any(damage in line and "ignored" in line for line in controller.knowledge.damage)
        assert damage in caplog.text
    else:
        assert not controller.knowledge.damage
    # The controller goes on; the next observation's id is kept.
    controller.tick(of(window(420.0, 1000.0, 4, rng=np.random.default_rng(2)), "app-1"), 420.0)
    assert controller.knowledge.application_id == "app-1"


def test_a_lost_executor_holds_until_replaced_then_plans_with_a_note() -> None:
    rng = np.random.default_rng(0)
    controller = Controller(CONFIG)
    for k in range(6):
        t = 60.0 * (k + 1)
        controller.tick(of(window(t, 1000.0, 4, rng=rng), "app-1", agent_target=4), t)
    hold_s = controller._replacement_within_s()
    t_lost = 420.0
    held = controller.tick(of(window(t_lost, 1000.0, 3, rng=rng), "app-1", agent_target=4), t_lost)
    assert held.reason is Reason.SKIP_MISSING_DATA and not held.rescale
    problem = held.evidence.skip.problem if held.evidence.skip else ""
    assert problem.startswith("executors lost: 4 -> 3 live (executor exec-3 gone), agent asking for 4")
    assert f"waiting for replacements (0 s of {hold_s:.0f} s)" in problem
    still = controller.tick(of(window(t_lost + 1, 1000.0, 3, rng=rng), "app-1", agent_target=4), t_lost + 1)
    assert still.reason is Reason.SKIP_MISSING_DATA, "held past one tick while the replacement is pending"
    late = t_lost + hold_s
    planned = controller.tick(of(window(late, 1000.0, 3, rng=rng), "app-1", agent_target=4), late)
    assert planned.reason is not Reason.SKIP_MISSING_DATA
    assert any("not replaced within" in note and "exec-3" in note for note in planned.notes), planned.notes
