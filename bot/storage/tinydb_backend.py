"""The default storage backend: TinyDB, one JSON file per store, written whole and atomically on every change."""

from __future__ import annotations

import json
import logging
import threading
from functools import reduce
from pathlib import Path
from typing import Any

from tinydb import Query, TinyDB
from tinydb.queries import QueryInstance
from tinydb.storages import Storage as _TinyStorage
from tinydb.table import Table as _TinyTable

from bot.storage import records
from bot.storage.base import Record, Storage, Table
from workspace.atomic import read_state, write_atomic

log = logging.getLogger(__name__)


def _tinydb_shaped(data: dict[str, Any]) -> bool:
    """TinyDB's layout: tables of documents keyed by their integer id. JSON of another shape failed every read and
    write of every table (so every alert) instead of being seen as damaged."""
    return all(isinstance(t, dict) and all(k.isdigit() and isinstance(d, dict) for k, d in t.items())
               for t in data.values())


class AtomicJSONStorage(_TinyStorage):
    """TinyDB's JSON file, written to a temp file and renamed over the old one (TinyDB's own storage rewrites the
    file in place: a kill -9 mid-write left it cut short, and every later alert failed on it). The replaced version
    stays as `<name>.bak`. A file damaged anyway is kept aside as `<name>.corrupt-<time>` with one log line, and
    the store goes on from `.bak`, or empty if that is damaged too."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.recovered: str | None = None  # what start-up had to do, for whoever reports health

    def read(self) -> dict[str, Any] | None:
        data, note = read_state(self.path, dict, log, fits=_tinydb_shaped)
        if note:
            records.note(note)
        self.recovered = note or self.recovered
        return data

    def write(self, data: dict[str, Any]) -> None:
        write_atomic(self.path, json.dumps(data), keep_copy=True)

    def close(self) -> None:
        pass



def _query(match: dict[str, Any]) -> QueryInstance:
    if not match:
        raise ValueError("a match needs at least one field")
    return reduce(lambda a, b: a & b, (Query()[k] == v for k, v in match.items()))


class _Table(Table):
    def __init__(self, table: _TinyTable, lock: threading.RLock) -> None:
        self._t, self._lock = table, lock

    def all(self) -> list[Record]:
        with self._lock:
            return [dict(r) for r in self._t.all()]

    def get(self, **match: Any) -> Record | None:
        with self._lock:
            row = self._t.get(_query(match))
        return dict(row) if isinstance(row, dict) else None

    def upsert(self, record: Record, **match: Any) -> None:
        with self._lock:
            # TinyDB keeps the next free document id in memory; another process (a `chat -m` beside the bot) may
            # have used it since, and the insert would fail "Document with ID n already exists". Re-read it.
            self._t._next_id = None
            self._t.upsert(record, _query(match))

    def remove(self, **match: Any) -> int:
        with self._lock:
            return len(self._t.remove(_query(match)))

    def discard(self, record: Record) -> int:
        with self._lock:
            ids = [doc.doc_id for doc in self._t.all() if dict(doc) == record]
            return len(self._t.remove(doc_ids=ids)) if ids else 0


class TinyDBStorage(Storage):
    """Tables in one TinyDB JSON file; thread-safe (pipeline threads and the event loop share a store)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = TinyDB(path, storage=AtomicJSONStorage)
        self._db.tables()  # read now: a damaged file is named at start-up, not at the first alert
        self._lock = threading.RLock()

    def table(self, name: str) -> Table:
        return _Table(self._db.table(name), self._lock)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(n for n in self._db.tables() if len(self._db.table(n)))

    def close(self) -> None:
        with self._lock:
            self._db.close()
