"""Knowledge: the SQLite store, so a restarted controller continues where it stopped."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from daedalus_spark.knowledge.state import HISTORY_LIMIT, IncompatibleKnowledge, Snapshot

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS component (name TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS forecaster (id INTEGER PRIMARY KEY CHECK (id = 1), model BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS decision (seq INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS recovery (seq INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE);
"""


class SqliteKnowledgeStore:
    """One SQLite file; every save is one transaction. Decisions and recoveries are appended, never rewritten."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly  # reports read a live controller's file without writing to it

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.readonly:
                conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not {"meta", "component"} <= tables:
                    conn.close()
                    raise IncompatibleKnowledge(f"{self.path}: not a daedalus-spark knowledge file (no meta and "
                                                f"component tables; it has: {', '.join(sorted(tables)) or 'none'})")
            else:
                conn = sqlite3.connect(self.path)
                conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise IncompatibleKnowledge(f"{self.path}: not a daedalus-spark knowledge file ({exc})") from None
        return conn

    def save(self, snapshot: Snapshot) -> None:
        conn = self._connect()
        try:
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('format_version', ?)", (str(snapshot.format_version),)
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO component VALUES (?, ?)", sorted(snapshot.components.items())
                )
                conn.execute("INSERT OR REPLACE INTO forecaster VALUES (1, ?)", (snapshot.forecaster,))
                # Decision texts carry their time, so they are unique; re-saving the same ones adds nothing.
                conn.executemany("INSERT OR IGNORE INTO decision (json) VALUES (?)", [(d,) for d in snapshot.decisions])
                conn.executemany("INSERT OR IGNORE INTO recovery (json) VALUES (?)", [(r,) for r in snapshot.recoveries])
        finally:
            conn.close()

    def load(self) -> Snapshot | None:
        if not self.path.exists():
            if self.readonly:
                raise IncompatibleKnowledge(f"{self.path}: no such file")
            return None
        conn = self._connect()
        try:
            version = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
            if version is None:
                return None
            model = conn.execute("SELECT model FROM forecaster WHERE id = 1").fetchone()
            return Snapshot(
                format_version=int(version[0]),
                components=dict(conn.execute("SELECT name, json FROM component")),
                forecaster=bytes(model[0]) if model else b"",
                decisions=_latest(conn, "decision"),
                recoveries=_latest(conn, "recovery"),
            )
        finally:
            conn.close()


def _latest(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    rows = conn.execute(f"SELECT json FROM {table} ORDER BY seq DESC LIMIT ?", (HISTORY_LIMIT,)).fetchall()
    return tuple(r[0] for r in reversed(rows))
