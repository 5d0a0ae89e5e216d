"""The storage backend several processes can share: SQLite (standard library) in WAL mode, one file per store.

Records are JSON text in one `records` table (`tbl`, `id`, `data`); `id` keeps insertion order. Matching is done in
Python on the decoded records, not with `json_extract`: the tables are small (tens to a few hundred rows), and
Python's `==` on decoded JSON is exactly TinyDB's rule (5 == 5.0, a missing field never equals None, nested values
compare by value), which SQL's typing would change. Every write is one `BEGIN IMMEDIATE` transaction, so an
upsert's read and its write are atomic across processes; `busy_timeout` makes a second writer wait its turn.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bot.storage import records
from bot.storage.base import Record, Storage, Table
from workspace.atomic import keep_aside

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_table ON records (tbl, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
DAMAGE = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)  # the file itself is bad, not merely locked
COLUMNS = {"records": {"id", "tbl", "data"}, "meta": {"key", "value"}}  # our layout: a file of another is set aside


class ForeignLayout(sqlite3.DatabaseError):
    """A SQLite file whose tables are not ours (another program's database, another version's layout)."""


def _check_layout(conn: sqlite3.Connection) -> None:
    """ForeignLayout when a table of ours exists with other columns, or as a view or an index (a foreign file would
    fail every query)."""
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master WHERE name IN ('records', 'meta', "
                              "'records_by_table')").fetchall())
    if any(kind != ("index" if name == "records_by_table" else "table") for name, kind in kinds.items()):
        raise ForeignLayout(f"its {', '.join(sorted(kinds))} are not this bot's tables")
    for table, wanted in COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}
        if have and not wanted <= have:
            raise ForeignLayout(f"its {table} table has columns {', '.join(sorted(have))}")


def _matches(row: Record, match: dict[str, Any]) -> bool:
    return all(k in row and row[k] == v for k, v in match.items())


def _checked(match: dict[str, Any]) -> dict[str, Any]:
    if not match:
        raise ValueError("a match needs at least one field")
    return match


def _decode(data: str | None) -> Record | None:
    try:
        row = json.loads(data)  # type: ignore[arg-type]
    except (ValueError, TypeError, RecursionError):  # not JSON, NULL, nested past Python's limit: damaged
        return None
    return row if isinstance(row, dict) else None


class _Table(Table):
    def __init__(self, store: SQLiteStorage, name: str) -> None:
        self._store, self._name = store, name

    def _rows(self, conn: sqlite3.Connection) -> list[tuple[int, Record]]:
        cur = conn.execute("SELECT id, data FROM records WHERE tbl = ? ORDER BY id", (self._name,))
        decoded = ((i, _decode(d)) for i, d in cur.fetchall())
        return [(i, r) for i, r in decoded if r is not None]  # a row damaged from outside is skipped, not fatal

    def all(self) -> list[Record]:
        with self._store.reading() as conn:
            return [r for _, r in self._rows(conn)]

    def get(self, **match: Any) -> Record | None:
        _checked(match)
        return next((r for r in self.all() if _matches(r, match)), None)

    def upsert(self, record: Record, **match: Any) -> None:
        _checked(match)
        with self._store.writing() as conn:
            hits = [(i, r) for i, r in self._rows(conn) if _matches(r, match)]
            if hits:
                conn.executemany("UPDATE records SET data = ? WHERE id = ?",
                                 [(json.dumps({**r, **record}), i) for i, r in hits])
            else:
                conn.execute("INSERT INTO records (tbl, data) VALUES (?, ?)", (self._name, json.dumps(record)))

    def remove(self, **match: Any) -> int:
        _checked(match)
        with self._store.writing() as conn:
            ids = [(i,) for i, r in self._rows(conn) if _matches(r, match)]
            conn.executemany("DELETE FROM records WHERE id = ?", ids)
            return len(ids)

    def discard(self, record: Record) -> int:
        with self._store.writing() as conn:
            ids = [(i,) for i, r in self._rows(conn) if r == record]
            conn.executemany("DELETE FROM records WHERE id = ?", ids)
            return len(ids)


class SQLiteStorage(Storage):
    """Tables in one SQLite file, safe for several threads (one connection under a lock) and several processes
    (WAL: readers never block the writer; writers take turns, waiting up to `busy_seconds`). All processes must be
    on one machine: WAL needs shared memory, so never put the file on a network file system."""

    def __init__(self, path: Path, busy_seconds: float = 30.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self._busy = path, busy_seconds
        self._lock = threading.RLock()
        self.recovered: str | None = None  # what start-up had to do, for whoever reports health
        self._conn: sqlite3.Connection | None = self._open()

    def _connect(self) -> sqlite3.Connection:
        # Created owner-only, as write_atomic's files are (SQLite gives its -wal and -shm files the same mode).
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
        # isolation_level=None: no implicit transactions; each write below is one explicit BEGIN IMMEDIATE.
        conn = sqlite3.connect(self.path, timeout=self._busy, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")  # persistent in the file; synchronous stays FULL
            _check_layout(conn)
            conn.executescript(SCHEMA)
            conn.execute("SELECT count(*) FROM records").fetchone()  # a damaged file fails here, at start-up
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            if self.path.is_dir():  # a directory where the store's file should be: kept aside like a damaged file
                raise ForeignLayout("it is a directory")
            conn = self._connect()
        except ForeignLayout as exc:
            why = f"is not this bot's store ({exc})"
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", None) not in DAMAGE:
                raise
            why = "was damaged"
        else:
            self._keep_undecodable(conn)
            return conn
        kept = keep_aside(self.path)
        for suffix in ("-wal", "-shm"):  # the journal belongs to the damaged file: it goes with it, or away
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.replace(kept.with_name(kept.name + suffix))
        self.recovered = f"{self.path.name} {why}; kept as {kept.name}, starting it empty"
        log.error("%s", self.recovered)
        records.note(self.recovered)
        return self._connect()

    def _keep_undecodable(self, conn: sqlite3.Connection) -> None:
        """Rows that are not JSON objects (written from outside) are set aside, not skipped on every read."""
        rows = conn.execute("SELECT id, tbl, data FROM records").fetchall()
        bad = [(i, t, d) for i, t, d in rows if _decode(d) is None]
        if not bad:
            return
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("DELETE FROM records WHERE id = ?", [(i,) for i, _, _ in bad])
        conn.execute("COMMIT")
        for tbl in sorted({t for _, t, _ in bad}):
            records.keep(self.path, str(tbl), [(d, "not a JSON object") for _, t, d in bad if t == tbl])

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, for one read (a single SELECT sees one committed state)."""
        with self._lock:
            if self._conn is None:
                raise sqlite3.ProgrammingError(f"{self.path.name} is closed")
            yield self._conn

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one write transaction, taken before anything is read (no lost update)."""
        with self.reading() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a failed COMMIT too: the next write must not find this one still open
                    conn.execute("ROLLBACK")
                raise

    def table(self, name: str) -> Table:
        return _Table(self, name)

    def names(self) -> list[str]:
        with self.reading() as conn:
            return [n for (n,) in conn.execute("SELECT DISTINCT tbl FROM records ORDER BY tbl").fetchall()]

    def adopt(self, source: Callable[[], Storage | None]) -> int | None:
        """Copy the records of `source()` (the store this file replaces) in, once in the file's life: a file that
        has adopted, or that started without a source, never does again. How many records came; None: not now."""
        with self.reading() as conn:
            if conn.execute("SELECT 1 FROM meta WHERE key = 'adopted'").fetchone():
                return None
        src = source()
        try:
            rows = [] if src is None else [(n, json.dumps(r)) for n in src.names() for r in src.table(n).all()]
        finally:
            if src is not None:
                src.close()
        with self.writing() as conn:  # two processes starting at once: the second finds the mark and copies nothing
            if conn.execute("SELECT 1 FROM meta WHERE key = 'adopted'").fetchone():
                return None
            conn.executemany("INSERT INTO records (tbl, data) VALUES (?, ?)", rows)
            conn.execute("INSERT INTO meta (key, value) VALUES ('adopted', ?)", (str(len(rows)),))
        return len(rows)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
