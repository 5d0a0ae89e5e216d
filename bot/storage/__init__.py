"""Small record storage for the bot's state (routes, mutes, rules, cron jobs): one interface, TinyDB by default."""

from __future__ import annotations

import logging
from pathlib import Path

from bot.storage.base import Backend, Record, Storage, Table
from bot.storage.sqlite_backend import SQLiteStorage
from bot.storage.tinydb_backend import TinyDBStorage

__all__ = ["Backend", "Record", "SQLiteStorage", "Storage", "Table", "TinyDBStorage", "open_storage"]

log = logging.getLogger(__name__)


def open_storage(path: Path, backend: Backend = "tinydb") -> Storage:
    """The store named by `path` (`WORKSPACE/.state/NAME.json`) on the configured backend (`storage.backend`).

    tinydb: that JSON file. sqlite: `NAME.sqlite3` beside it; the first time it is created it copies in what the
    JSON file holds, once (the JSON file is left as it was: switching back to tinydb goes back to that state).
    """
    if backend == "tinydb":
        return TinyDBStorage(path)
    store = SQLiteStorage(path.with_suffix(".sqlite3"))
    copied = store.adopt(lambda: TinyDBStorage(path) if path.exists() else None)
    if copied:
        log.warning("%s: copied %d records from %s (left as it was; storage.backend: tinydb would go back to it)",
                    store.path.name, copied, path.name)
    return store
