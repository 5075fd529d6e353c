"""Knowledge: the SQLite store, so a restarted controller continues where it stopped."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from daedalus_spark.knowledge.state import HISTORY_LIMIT, IncompatibleKnowledge, Snapshot

TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS component (name TEXT PRIMARY KEY, json TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS forecaster (id INTEGER PRIMARY KEY CHECK (id = 1), model BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS decision (seq INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS recovery (seq INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE)",
)
OUR_TABLES = frozenset({"meta", "component", "forecaster", "decision", "recovery"})


class KnowledgeStoreError(OSError):
    """The knowledge file cannot be used right now (locked, missing directory, disk full); it may be fine."""


class SqliteKnowledgeStore:
    """One SQLite file; every save is one transaction. Decisions and recoveries are appended, never rewritten.

    A database that holds tables but not our `meta` row belongs to someone else: it is refused, never written to.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s

    def save(self, snapshot: Snapshot) -> None:
        self._check_directory()
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        try:
            # One explicit transaction around the ownership check, the tables and the rows: a foreign file is
            # refused before anything is created, and a crash leaves either the old state or the new one.
            conn.execute("BEGIN IMMEDIATE")
            if _tables(conn) and _format_version(conn) is None:
                raise self._foreign()
            for statement in TABLES:
                conn.execute(statement)
            _write(conn, snapshot)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()

    def load(self) -> Snapshot | None:
        if not self.path.exists():
            self._check_directory()
            return None
        try:
            # Read-only: loading never creates tables, not even in a file that turns out not to be ours.
            conn = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True, timeout=self.busy_timeout_s)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        try:
            if not _tables(conn):
                return None  # an empty database: nothing saved yet
            version = _format_version(conn)
            if version is None:
                raise self._foreign()
            return self._read(conn, version)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            conn.close()

    def _read(self, conn: sqlite3.Connection, version: object) -> Snapshot:
        if not isinstance(version, str) or not version.isdigit() or len(version) > 6:
            raise IncompatibleKnowledge(f"{self.path}: knowledge format version {version!r:.20} is not ours")
        model = conn.execute("SELECT model FROM forecaster WHERE id = 1").fetchone()
        return Snapshot(
            format_version=int(version),
            components=dict(conn.execute("SELECT name, json FROM component")),
            # Anything but bytes is damaged; empty bytes make the forecaster relearn (with a warning).
            forecaster=bytes(model[0]) if model and isinstance(model[0], bytes) else b"",
            decisions=_latest(conn, "decision"),
            recoveries=_latest(conn, "recovery"),
        )

    def _check_directory(self) -> None:
        parent = self.path.absolute().parent
        if not parent.is_dir():
            raise KnowledgeStoreError(f"{self.path}: directory {parent} does not exist")

    def _foreign(self) -> IncompatibleKnowledge:
        return IncompatibleKnowledge(
            f"{self.path}: not a daedalus-spark knowledge file (an SQLite database with other tables; refusing to "
            "write into it)"
        )

    def _error(self, exc: sqlite3.Error) -> Exception:
        """Name what went wrong with the file, with its path: locked, unreadable, full, or not a database."""
        message = str(exc)
        if "locked" in message or "busy" in message:
            return KnowledgeStoreError(
                f"{self.path}: locked by another process (still locked after {self.busy_timeout_s:g} s)"
            )
        if "not a database" in message or "malformed" in message or "no such" in message or "columns" in message:
            return IncompatibleKnowledge(f"{self.path}: not a daedalus-spark knowledge file ({message})")
        if "unable to open" in message:
            return KnowledgeStoreError(f"{self.path}: cannot open ({message}; check the permissions)")
        if "readonly" in message or "read-only" in message:
            return KnowledgeStoreError(f"{self.path}: not writable ({message})")
        return KnowledgeStoreError(f"{self.path}: {message}")


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _format_version(conn: sqlite3.Connection) -> object | None:
    """Our format version, or None when the database has no `meta` table of ours."""
    columns = [r[1] for r in conn.execute("PRAGMA table_info(meta)")]
    if columns != ["key", "value"]:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    return None if row is None else row[0]


def _write(conn: sqlite3.Connection, snapshot: Snapshot) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('format_version', ?)", (str(snapshot.format_version),))
    conn.executemany("INSERT OR REPLACE INTO component VALUES (?, ?)", sorted(snapshot.components.items()))
    conn.execute("INSERT OR REPLACE INTO forecaster VALUES (1, ?)", (snapshot.forecaster,))
    # Decision texts carry their time, so they are unique; re-saving the same ones adds nothing.
    conn.executemany("INSERT OR IGNORE INTO decision (json) VALUES (?)", [(d,) for d in snapshot.decisions])
    conn.executemany("INSERT OR IGNORE INTO recovery (json) VALUES (?)", [(r,) for r in snapshot.recoveries])


def _latest(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    query = f"SELECT json FROM {table} ORDER BY seq DESC LIMIT ?"  # noqa: S608 - table is one of our constants
    rows = conn.execute(query, (HISTORY_LIMIT,)).fetchall()
    return tuple(r[0] for r in reversed(rows))
