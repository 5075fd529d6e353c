"""Knowledge: the SQLite store, so a restarted controller continues where it stopped."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from daedalus_spark.config import HISTORY_LIMIT, KnowledgeConfig
from daedalus_spark.knowledge.state import IncompatibleKnowledge, Snapshot

# Schema 1 keyed decisions and recoveries by a UNIQUE index on their JSON text (an index as large as the table);
# schema 2 keys them by a 16-byte digest of that text and stamps them with their time, for age-based retention. Not
# the time itself: a clock stepped back repeats tick times, and a store of schema 1 may already hold such rows.
SCHEMA_VERSION = 2
HISTORY_TABLES = {"decision": "time_s", "recovery": "rescale_time_s"}  # table -> the JSON field holding its time


def _history_table(table: str) -> tuple[str, str]:
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (seq INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, time_s REAL, "
        "json TEXT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {table}_time ON {table} (time_s)",
    )


TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS component (name TEXT PRIMARY KEY, json TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS forecaster (id INTEGER PRIMARY KEY CHECK (id = 1), model BLOB NOT NULL)",
    *(statement for table in HISTORY_TABLES for statement in _history_table(table)),
)
OUR_TABLES = frozenset({"meta", "component", "forecaster", "decision", "recovery"})


class KnowledgeStoreError(OSError):
    """The knowledge file cannot be used right now (locked, missing directory, disk full); it may be fine."""


class SqliteKnowledgeStore:
    """One SQLite file; every save is one transaction. Decisions and recoveries are appended, never rewritten.

    A database that holds tables but not our `meta` row belongs to someone else: it is refused, never written to.
    With a `retention`, every save also deletes the decisions and recoveries beyond it (never the newest
    HISTORY_LIMIT, which `load` reads back); a store of an older schema is migrated by the first save.
    """

    def __init__(
        self, path: str | Path, *, busy_timeout_s: float = 5.0, retention: KnowledgeConfig | None = None
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self.retention = retention

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
            tables = _tables(conn)
            if tables and _format_version(conn) is None:
                raise self._foreign()
            self._migrate(conn, tables)
            for statement in TABLES:
                conn.execute(statement)
            _write(conn, snapshot)
            if self.retention is not None:
                for table in HISTORY_TABLES:
                    _prune(conn, table, self.retention)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()

    def load(self) -> Snapshot | None:
        self._check_directory()
        if not self.path.exists():
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

    def _migrate(self, conn: sqlite3.Connection, tables: set[str]) -> None:
        """Bring an older schema to SCHEMA_VERSION inside the save's transaction, keeping every row and its order."""
        if "decision" not in tables:
            return  # a new store: created at SCHEMA_VERSION
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = "1" if row is None else row[0]  # schema 1 did not say
        if version == str(SCHEMA_VERSION):
            return
        if version != "1":
            raise IncompatibleKnowledge(f"{self.path}: knowledge schema {version!r:.20} is not one this version knows")
        for table, time_field in HISTORY_TABLES.items():
            conn.execute(f"ALTER TABLE {table} RENAME TO {table}_v1")
            conn.execute(_history_table(table)[0])
            rows = conn.execute(f"SELECT seq, json FROM {table}_v1 ORDER BY seq").fetchall()  # noqa: S608
            conn.executemany(
                f"INSERT INTO {table} (seq, key, time_s, json) VALUES (?, ?, ?, ?)",  # noqa: S608 - our constant
                [(seq, _key(text), _time_s(text, time_field), text) for seq, text in rows],
            )
            conn.execute(f"DROP TABLE {table}_v1")

    def _check_directory(self) -> None:
        """A path that can never hold the store: a missing directory, a file where the directory should be, or a
        directory or device (/dev/null would take every save and keep nothing) where the file should be."""
        parent = self.path.absolute().parent
        if not parent.is_dir():
            problem = (
                f"{parent} is a file, not a directory" if parent.exists() else f"directory {parent} does not exist"
            )
            raise KnowledgeStoreError(f"{self.path}: {problem}")
        if self.path.exists() and not self.path.is_file():
            kind = "a directory" if self.path.is_dir() else "a device, pipe or socket"
            raise KnowledgeStoreError(f"{self.path}: {kind}, not a file")

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
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    conn.executemany("INSERT OR REPLACE INTO component VALUES (?, ?)", sorted(snapshot.components.items()))
    conn.execute("INSERT OR REPLACE INTO forecaster VALUES (1, ?)", (snapshot.forecaster,))
    _append(conn, "decision", snapshot.decisions)
    _append(conn, "recovery", snapshot.recoveries)


def _append(conn: sqlite3.Connection, table: str, texts: Sequence[str]) -> None:
    """Insert the texts that follow the newest stored one (normally the tick's only new row): the snapshot holds the
    latest HISTORY_LIMIT, oldest first. Texts carry their time, so they are unique; re-saved ones add nothing."""
    newest = conn.execute(f"SELECT json FROM {table} ORDER BY seq DESC LIMIT 1").fetchone()  # noqa: S608
    start = 0
    if newest is not None:
        start = next((i + 1 for i in range(len(texts) - 1, -1, -1) if texts[i] == newest[0]), 0)
    time_field = HISTORY_TABLES[table]
    conn.executemany(
        f"INSERT OR IGNORE INTO {table} (key, time_s, json) VALUES (?, ?, ?)",  # noqa: S608 - our constant
        [(_key(text), _time_s(text, time_field), text) for text in texts[start:]],
    )


def _prune(conn: sqlite3.Connection, table: str, retention: KnowledgeConfig) -> None:
    """Delete what is beyond the retention, oldest first, but never the newest HISTORY_LIMIT rows (`load` reads
    them). Deleted pages are reused by later rows, so the file stops growing once the retention is reached."""
    # One aggregate per query: SQLite answers a lone max() from the index, two together by scanning the table.
    newest_seq = conn.execute(f"SELECT max(seq) FROM {table}").fetchone()[0]  # noqa: S608 - our constant
    newest_s = conn.execute(f"SELECT max(time_s) FROM {table}").fetchone()[0]  # noqa: S608 - our constant
    if newest_seq is None:
        return
    if retention.retention_rows:
        keep = max(retention.retention_rows, HISTORY_LIMIT)
        conn.execute(f"DELETE FROM {table} WHERE seq <= ?", (newest_seq - keep,))  # noqa: S608 - our constant
    if retention.retention_days and newest_s is not None:
        conn.execute(
            f"DELETE FROM {table} WHERE time_s < ? AND seq <= ?",  # noqa: S608 - our constant
            (newest_s - retention.retention_days * 86400.0, newest_seq - HISTORY_LIMIT),
        )


def _key(text: str) -> bytes:
    """The row's key: fixed size, whatever the text's length."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _time_s(text: str, field: str) -> float | None:
    """The row's time for age-based retention; None (kept until the row bound) when the text has no usable one."""
    try:
        value = json.loads(text).get(field)
    except (ValueError, AttributeError, RecursionError):
        return None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _latest(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    query = f"SELECT json FROM {table} ORDER BY seq DESC LIMIT ?"  # noqa: S608 - table is one of our constants
    rows = conn.execute(query, (HISTORY_LIMIT,)).fetchall()
    return tuple(r[0] for r in reversed(rows))
