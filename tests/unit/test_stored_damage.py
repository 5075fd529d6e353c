"""Stored values that would stop the controller for good: every stored row and time is checked like any stored value;
damaged history rows and times ahead of the clock are left out, said once, and the controller goes on; `report`
says the same instead of a traceback or printing damage as data."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from daedalus_spark.cli import main
from daedalus_spark.clock import FakeClock
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Reason
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import IncompatibleKnowledge, restore
from daedalus_spark.loop import Loop
from daedalus_spark.testing import SAVED_CONFIG, SAVED_START_S, ScriptedActuator, ScriptedMonitor, saved_store


def _every_row(table: str, change) -> callable:
    def damage(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            for seq, text in conn.execute(f"SELECT seq, json FROM {table}").fetchall():  # noqa: S608 - test constant
                conn.execute(f"UPDATE {table} SET json = ? WHERE seq = ?", (change(text), seq))  # noqa: S608

    return damage


def _set(key, value):
    return lambda text: json.dumps({**json.loads(text), key: value})


def _add_recovery(record) -> callable:
    def damage(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            conn.execute("INSERT INTO recovery (key, time_s, json) VALUES (x'00', 0, ?)", (json.dumps(record),))

    return damage


DAMAGED_ROWS = [
    # (id, damage, what the one line per damaged row names)
    ("time-string", _every_row("decision", _set("time_s", "soon")), "decision 1 of 3.time_s: expected a number"),
    ("time-null", _every_row("decision", _set("time_s", None)), "time_s: expected a number"),
    ("time-nan", _every_row("decision", _set("time_s", float("nan"))), "time_s: nan is not a finite number"),
    ("reason-unknown", _every_row("decision", _set("reason", "vibes")), "reason: 'vibes' is not a reason"),
    ("scaleout-string", _every_row("decision", _set("target_scaleout", "7")), "target_scaleout: expected an integer"),
    ("scaleout-huge", _every_row("decision", _set("target_scaleout", 10**300)), "target_scaleout: 1000"),
    ("scaleout-bool", _every_row("decision", _set("current_scaleout", True)), "current_scaleout: expected an integer"),
    ("evidence-list", _every_row("decision", _set("evidence", [1, 2])), "evidence: expected an object"),
    ("evidence-nested", _every_row("decision", _set("evidence", {"a": {"b": 1}})), "evidence.a: expected a number"),
    (
        "outcome-unknown",
        _every_row("decision", _set("actuation", "exploded")),
        "actuation: 'exploded' is not an outcome",
    ),
    ("notes-not-strings", _every_row("decision", _set("notes", [1])), "notes: expected a list of strings"),
    ("not-json", _every_row("decision", lambda t: "{not json"), "damaged decision left out"),
    ("not-an-object", _every_row("decision", lambda t: "[1, 2]"), "expected an object"),
    ("recovery-strings", _add_recovery({"rescale_time_s": "a", "direction": "out"}), "rescale_time_s: expected"),
    ("recovery-direction", _add_recovery({"rescale_time_s": 1.0, "direction": 3}), "direction: expected a string"),
    ("recovery-missing", _add_recovery({"rescale_time_s": 1.0, "direction": "in"}), "from_scaleout: missing"),
]


@pytest.mark.parametrize(("damage", "named"), [c[1:] for c in DAMAGED_ROWS], ids=[c[0] for c in DAMAGED_ROWS])
def test_damaged_rows_are_left_out_named_and_the_controller_goes_on(tmp_path: Path, caplog, damage, named) -> None:
    path = saved_store(tmp_path)
    damage(path)
    controller = Controller.resume(SAVED_CONFIG, SqliteKnowledgeStore(path), now_s=SAVED_START_S + 60)
    assert any(named in line for line in controller.knowledge.damage), controller.knowledge.damage
    assert named in caplog.text  # said in the log, once per row
    clock = FakeClock(SAVED_START_S + 600)
    loop = Loop(controller, ScriptedMonitor(workload_per_s=6000), ScriptedActuator(), SqliteKnowledgeStore(path), clock)
    for _ in range(2):
        clock.advance(5)
        assert loop.step().decision.reason is not Reason.SKIP_MISSING_DATA  # ticks decide, none raises


@pytest.mark.parametrize(("damage", "named"), [c[1:] for c in DAMAGED_ROWS], ids=[c[0] for c in DAMAGED_ROWS])
def test_report_names_the_damage_and_shows_no_damaged_value(tmp_path: Path, capsys, damage, named) -> None:
    path = saved_store(tmp_path)
    damage(path)
    assert main(["report", "--knowledge", str(path)]) == 0
    out = capsys.readouterr().out
    assert "knowledge store: damaged" in out and named in out
    # A damaged value is quoted in its damage line only, never shown as data.
    assert not [line for line in out.splitlines() if "soon" in line and not line.startswith("knowledge store:")]
    assert main(["report", "--knowledge", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert any(named in line for line in report["damage"])


def _component(name: str, key: str, value) -> callable:
    def damage(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            raw = json.loads(conn.execute("SELECT json FROM component WHERE name = ?", (name,)).fetchone()[0])
            conn.execute("UPDATE component SET json = ? WHERE name = ?", (json.dumps({**raw, key: value}), name))

    return damage


def test_a_last_rescale_ahead_of_the_clock_holds_no_cool_down(tmp_path: Path) -> None:
    path = saved_store(tmp_path)
    _component("controller", "last_rescale_s", SAVED_START_S + 10 * 86400)(path)
    controller = Controller.resume(SAVED_CONFIG, SqliteKnowledgeStore(path), now_s=SAVED_START_S + 600)
    assert controller.knowledge.last_rescale_s is None
    assert any(
        "controller.last_rescale_s" in line and "ahead of the clock" in line for line in controller.knowledge.damage
    )
    clock = FakeClock(SAVED_START_S + 600)
    loop = Loop(controller, ScriptedMonitor(workload_per_s=6000), ScriptedActuator(), None, clock)
    assert loop.step().decision.reason is not Reason.COOLDOWN


def test_rows_and_a_pending_recovery_ahead_of_the_clock_are_left_out(tmp_path: Path) -> None:
    path = saved_store(tmp_path)
    _every_row("decision", _set("time_s", SAVED_START_S + 86400))(path)
    with sqlite3.connect(path) as conn:
        raw = json.loads(conn.execute("SELECT json FROM component WHERE name = 'recovery'").fetchone()[0])
        raw["pending"]["rescale_time_s"] = SAVED_START_S + 86400
        conn.execute("UPDATE component SET json = ? WHERE name = 'recovery'", (json.dumps(raw),))
    saved = SqliteKnowledgeStore(path).load()
    assert saved is not None
    knowledge = restore(saved, SAVED_CONFIG, now_s=SAVED_START_S + 600)
    assert not knowledge.decisions  # no rescale "tomorrow" eats today's rescale budget
    assert any("3 decision(s) from the future" in line for line in knowledge.damage)
    assert knowledge.recovery.pending is None  # it would never end: its elapsed time stays negative
    assert any("pending recovery's rescale time" in line for line in knowledge.damage)
    # Without a clock (a test, the simulator) nothing is judged against one.
    assert len(restore(saved, SAVED_CONFIG).decisions) == 3


def test_within_a_loop_interval_of_the_clock_is_not_the_future(tmp_path: Path) -> None:
    path = saved_store(tmp_path)
    saved = SqliteKnowledgeStore(path).load()
    assert saved is not None
    knowledge = restore(saved, SAVED_CONFIG, now_s=SAVED_START_S)  # the last row is 10 s later: a clock a little behind
    assert len(knowledge.decisions) == 3 and not knowledge.damage


def test_a_damaged_learned_value_is_still_refused_at_start(tmp_path: Path) -> None:
    path = saved_store(tmp_path)
    _component("controller", "last_rescale_s", "x")(path)
    with pytest.raises(IncompatibleKnowledge, match=r"controller\.last_rescale_s: expected a number"):
        Controller.resume(SAVED_CONFIG, SqliteKnowledgeStore(path), now_s=SAVED_START_S)


def test_report_says_a_last_rescale_is_ahead_of_the_clock(tmp_path: Path, capsys) -> None:
    path = saved_store(tmp_path)
    _component("controller", "last_rescale_s", 4e9)(path)
    assert main(["report", "--knowledge", str(path)]) == 0
    out = capsys.readouterr().out
    assert "controller.last_rescale_s 4000000000 is" in out and "ahead of the clock" in out
