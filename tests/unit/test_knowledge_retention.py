"""Bounded knowledge: store retention keeps what the controller and report read, schema migration, log rotation."""

from __future__ import annotations

import json
import sqlite3

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import KnowledgeConfig, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Decision, Reason
from daedalus_spark.knowledge import sqlite_store, state
from daedalus_spark.knowledge.sqlite_store import SCHEMA_VERSION, SqliteKnowledgeStore
from daedalus_spark.knowledge.state import FORMAT_VERSION, IncompatibleKnowledge, Snapshot
from daedalus_spark.loop import Loop, StepResult
from daedalus_spark.plan.budget import rescale_tokens
from daedalus_spark.report.knowledge_report import build
from daedalus_spark.runtime.publishers import DecisionLog
from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

LIMIT = 10  # HISTORY_LIMIT, made small so the tests stay short
COMPONENTS = {"capacity": "{}", "recovery": "{}", "controller": "{}"}
SCHEMA_1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE component (name TEXT PRIMARY KEY, json TEXT NOT NULL)",
    "CREATE TABLE forecaster (id INTEGER PRIMARY KEY CHECK (id = 1), model BLOB NOT NULL)",
    "CREATE TABLE decision (seq INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE)",
    "CREATE TABLE recovery (seq INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE)",
)


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(sqlite_store, "HISTORY_LIMIT", LIMIT)
    monkeypatch.setattr(state, "HISTORY_LIMIT", LIMIT)


def decision_text(time_s: float, **extra: object) -> str:
    return json.dumps({"time_s": time_s, "reason": "keep_current", **extra}, sort_keys=True)


def rows(path, table="decision"):
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute(f"SELECT json FROM {table} ORDER BY seq")]  # noqa: S608


def schema_1_store(path, decisions, recoveries):
    """A store as the previous version wrote it, built with sqlite3 directly."""
    with sqlite3.connect(path) as conn:
        for statement in SCHEMA_1:
            conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES ('format_version', '1')")
        conn.executemany("INSERT INTO component VALUES (?, ?)", COMPONENTS.items())
        conn.execute("INSERT INTO forecaster VALUES (1, ?)", (b"model",))
        conn.executemany("INSERT INTO decision (json) VALUES (?)", [(d,) for d in decisions])
        conn.executemany("INSERT INTO recovery (json) VALUES (?)", [(r,) for r in recoveries])


def test_schema_1_store_is_migrated_keeping_every_row_in_order(tmp_path):
    path = tmp_path / "old.sqlite"
    # A clock stepped back repeats a tick time; a text without a time or not JSON at all must survive too.
    decisions = [decision_text(60.0), decision_text(120.0), decision_text(60.0, notes=["clock stepped back"])]
    decisions += ['{"t": 1}', "not json", decision_text(float("nan"))]
    recoveries = [json.dumps({"rescale_time_s": 100.0, "recovery_s": 30.0})]
    schema_1_store(path, decisions, recoveries)
    store = SqliteKnowledgeStore(path, retention=KnowledgeConfig())
    old = store.load()
    assert old is not None and old.decisions == tuple(decisions)  # an old store is readable before any save

    store.save(Snapshot(FORMAT_VERSION, COMPONENTS, b"model", (*decisions, decision_text(180.0)), tuple(recoveries)))

    assert rows(path) == [*decisions, decision_text(180.0)]
    assert rows(path, "recovery") == recoveries
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        indexed = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql NOT NULL")]
        assert indexed and not any("json" in sql for sql in indexed)
        keys = {len(k) for (k,) in conn.execute("SELECT key FROM decision")}
        times = [t for (t,) in conn.execute("SELECT time_s FROM decision ORDER BY seq")]
    assert keys == {16}  # the key does not grow with the text
    assert times == [60.0, 120.0, 60.0, None, None, None, 180.0]
    assert SqliteKnowledgeStore(path).load().decisions == (*decisions, decision_text(180.0))


def test_a_schema_this_version_does_not_know_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    schema_1_store(path, [decision_text(60.0)], [])
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    with pytest.raises(IncompatibleKnowledge, match="schema '3'"):
        SqliteKnowledgeStore(path).save(Snapshot(FORMAT_VERSION, COMPONENTS, b"", (decision_text(60.0),), ()))
    assert rows(path) == [decision_text(60.0)]


@pytest.mark.parametrize(
    "retention,kept",
    [
        pytest.param(None, 100, id="no-retention"),
        pytest.param(KnowledgeConfig(retention_days=0, retention_rows=0), 100, id="unbounded"),
        pytest.param(KnowledgeConfig(retention_days=0, retention_rows=30), 30, id="rows"),
        pytest.param(KnowledgeConfig(retention_days=1800 / 86400, retention_rows=0), 31, id="days"),
        pytest.param(KnowledgeConfig(retention_days=1800 / 86400, retention_rows=20), 20, id="tighter-wins"),
        pytest.param(KnowledgeConfig(retention_days=60 / 86400, retention_rows=0), LIMIT, id="never-below-read-back"),
        pytest.param(KnowledgeConfig(retention_days=0, retention_rows=3), LIMIT, id="rows-below-read-back"),
    ],
)
def test_retention_keeps_the_newest_rows(tmp_path, small_limit, retention, kept):
    store = SqliteKnowledgeStore(tmp_path / "k.sqlite", retention=retention)
    texts = [decision_text(60.0 * i) for i in range(100)]  # one decision a minute, as the loop makes them
    for i in range(1, 101):
        store.save(Snapshot(FORMAT_VERSION, COMPONENTS, b"", tuple(texts[max(0, i - LIMIT) : i]), ()))
    assert rows(tmp_path / "k.sqlite") == texts[-kept:]
    assert store.load().decisions == tuple(texts[-LIMIT:])


def test_pruned_store_still_holds_what_the_controller_and_report_read(tmp_path, small_limit):
    """The shortest retention the config accepts: a restarted controller reports and plans as the one that ran."""
    config = parse_config(
        {
            "controller": {"knowledge_path": str(tmp_path / "k.sqlite"), "max_scaleout": 12},
            "forecast": {"background_refit": False, "min_history_s": 600},
            "knowledge": {"retention_days": 3600 / 86400, "retention_rows": 1000},
        }
    )
    store = SqliteKnowledgeStore(config.controller.knowledge_path, retention=config.knowledge)
    clock = FakeClock(60.0)
    loop = Loop(Controller(config), ScriptedMonitor(), ScriptedActuator(), store, clock)
    for _ in range(90):
        loop.step()
        clock.advance(60.0)
    times = [json.loads(t)["time_s"] for t in rows(config.controller.knowledge_path)]
    assert times[-1] - times[0] >= 3600  # the longest window read (forecast history, the rescale budget's hour)
    assert len(times) < 90  # and older rows are gone

    ran, resumed = loop.controller.knowledge, Controller.resume(config, store).knowledge
    assert list(resumed.decisions) == list(ran.decisions) and len(ran.decisions) == LIMIT
    assert list(resumed.recoveries) == list(ran.recoveries)
    assert build(resumed).to_json() == build(ran).to_json()
    applied = [
        [d.time_s for d in k.decisions if d.rescale and d.actuation and d.actuation.outcome == "applied"]
        for k in (ran, resumed)
    ]
    assert applied[0] and rescale_tokens(applied[0], clock.now(), per_hour=3) == rescale_tokens(
        applied[1], clock.now(), per_hour=3
    )


def step_result(time_s: float) -> StepResult:
    return StepResult(time_s, Decision(time_s, 2, 2, Reason.CURRENT_IS_SMALLEST_VALID), None, None, {"tick": 0.001})


def test_decision_log_rotates_and_keeps_the_newest_lines(tmp_path):
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, max_bytes=2000, backups=2)
    for t in range(200):
        log.publish(step_result(float(t)))
    files = [path.with_name(f"decisions.jsonl.{i}") for i in (2, 1)] + [path]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in files)  # .3 never written
    assert all(0 < p.stat().st_size <= 2000 for p in files)
    times = [json.loads(line)["time_s"] for p in files for line in p.read_text().splitlines()]
    assert times == [float(t) for t in range(200 - len(times), 200)]  # contiguous, newest last


def test_decision_log_without_a_bound_never_rotates(tmp_path):
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path)
    for t in range(50):
        log.publish(step_result(float(t)))
    assert [p.name for p in tmp_path.iterdir()] == ["decisions.jsonl"]
    assert len(path.read_text().splitlines()) == 50


def test_pruning_reads_indexes_never_the_whole_table(tmp_path, monkeypatch):
    """Each tick's pruning costs the same with 1,000 rows kept or 100,000: no statement of it scans a table."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite_store.sqlite3, "connect", traced)
    store = SqliteKnowledgeStore(
        tmp_path / "k.sqlite", retention=KnowledgeConfig(retention_days=1, retention_rows=2000)
    )
    recovery = json.dumps({"rescale_time_s": 30.0})
    store.save(Snapshot(FORMAT_VERSION, COMPONENTS, b"", (decision_text(60.0),), (recovery,)))
    pruning = [s for s in statements if s.startswith("DELETE") or "max(" in s]
    assert {s.split()[2] for s in pruning if s.startswith("DELETE")} == {"decision", "recovery"}
    monkeypatch.undo()
    with sqlite3.connect(tmp_path / "k.sqlite") as conn:
        plans = {s: [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {s}")] for s in pruning}
    assert not {s: p for s, p in plans.items() if any(step.startswith("SCAN") for step in p)}
