"""The bad-input probe's stored fields: a knowledge store as a controller leaves it, damaged one field at a time, then
read back by the resumed sidecar or by `report`."""

from __future__ import annotations

import io
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from bad_input.harness import Outcome, base, captured_logs, cli


def saved_store(tmp: Path) -> Path:
    """A store as a controller leaves it after three ticks, one of them a rescale (built in-process)."""
    from daedalus_spark.clock import FakeClock
    from daedalus_spark.config import parse_config
    from daedalus_spark.controller import Controller
    from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
    from daedalus_spark.loop import Loop
    from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

    path = tmp / "k.sqlite"
    config = parse_config(base(tmp))
    store = SqliteKnowledgeStore(path)
    clock = FakeClock(1_700_000_000.0)
    loop = Loop(Controller(config), ScriptedMonitor(), ScriptedActuator(), store, clock)
    for _ in range(3):
        loop.step()
        clock.advance(5)
    return path


def damaged(sql: str, *params: object) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            conn.execute(sql, params)
        return path

    return make


def decision_field(key: str, value: object) -> Callable[[Path], Path]:
    """Every stored decision's `key` set to `value`."""

    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            for seq, text in conn.execute("SELECT seq, json FROM decision").fetchall():
                raw = json.loads(text)
                raw[key] = value
                conn.execute("UPDATE decision SET json = ? WHERE seq = ?", (json.dumps(raw), seq))
        return path

    return make


def component_field(component: str, key: str, value: object) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            raw = json.loads(conn.execute("SELECT json FROM component WHERE name = ?", (component,)).fetchone()[0])
            raw[key] = value
            conn.execute("UPDATE component SET json = ? WHERE name = ?", (json.dumps(raw), component))
        return path

    return make


def add_recovery(record: dict) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO recovery (key, time_s, json) VALUES (?, ?, ?)",
                (os.urandom(16), 0.0, json.dumps(record)),
            )
        return path

    return make


def report_on(make: Callable[[Path], Path], *extra: str) -> Callable[[Path], Outcome]:
    return lambda tmp: cli("report", "--knowledge", str(make(tmp)), *extra)


def resume_then_tick(make: Callable[[Path], Path], ticks: int = 2) -> Callable[[Path], Outcome]:
    """The sidecar resumed from a damaged store, ticking against the scripted job (in-process, fake clock):
    refused at start with one line, or ticks that decide (a tick that raises counts as a traceback)."""

    def run(tmp: Path) -> Outcome:
        from daedalus_spark.clock import FakeClock
        from daedalus_spark.config import parse_config
        from daedalus_spark.runtime.wiring import assemble_sidecar
        from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

        make(tmp)
        config = parse_config(base(tmp, controller={"cooldown_s": 60}))
        clock = FakeClock(1_700_000_100.0)
        err = io.StringIO()
        with captured_logs(err):
            try:
                car = assemble_sidecar(config, ScriptedMonitor(workload_per_s=6000), ScriptedActuator(), clock=clock)
            except Exception as exc:  # noqa: BLE001 - what cli.main would print, if it is one of its errors
                return _as_cli_error(exc, err.getvalue())
            reasons = []
            for _ in range(ticks):
                clock.advance(600)
                result = car.step()
                reasons.append("raised" if result is None else result.decision.reason.value)
            car.close()
        if "raised" in reasons:
            return Outcome(1, "", err.getvalue() + "\nTraceback (tick raised)", "")
        return Outcome(0, " ".join(reasons), err.getvalue())

    return run


def _as_cli_error(exc: Exception, logged: str) -> Outcome:
    from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError
    from daedalus_spark.knowledge.state import IncompatibleKnowledge

    if isinstance(exc, (IncompatibleKnowledge, KnowledgeStoreError)):
        return Outcome(2, "", logged + f"daedalus-spark: error: {exc}\n")
    return Outcome(1, "", logged + f"Traceback: {type(exc).__name__}: {exc}")


def mentions(*words: str) -> Callable[[Outcome], str]:
    """For damage gone on without: the output must say what was left out."""

    def check(o: Outcome) -> str:
        text = (o.out + o.err).lower()
        return "" if all(w.lower() in text for w in words) else f"went on without saying {words[0]!r} was damaged"

    return check


def not_holding_cooldown(o: Outcome) -> str:
    return "" if "cooldown" not in o.out and "recent" not in o.out else f"still held: {o.out}"


RECOVERY_OF_STRINGS = {
    "rescale_time_s": "a",
    "direction": 3,
    "from_scaleout": "x",
    "to_scaleout": None,
    "recovery_s": "long",
    "predicted_downtime_s": 1,
}


DAMAGE = [  # (id, how the store is damaged, what a clear message names)
    ("decision-time-string", decision_field("time_s", "soon"), ("time_s",)),
    ("decision-time-null", decision_field("time_s", None), ("time_s",)),
    ("decision-time-future", decision_field("time_s", 4e9), ("future",)),
    ("decision-reason-unknown", decision_field("reason", "vibes"), ("reason",)),
    ("decision-scaleout-string", decision_field("target_scaleout", "7"), ("target_scaleout",)),
    ("decision-scaleout-huge", decision_field("target_scaleout", 1e300), ("target_scaleout",)),
    ("decision-evidence-list", decision_field("evidence", [1, 2]), ("evidence",)),
    ("decision-not-json", damaged("UPDATE decision SET json = '{not json'"), ("decision",)),
    ("recovery-strings", add_recovery(RECOVERY_OF_STRINGS), ("recovery",)),
    ("recovery-missing-keys", add_recovery({"rescale_time_s": 1.0}), ("recovery",)),
]
