"""Small record storage for the bot's state (routes, mutes, rules, cron jobs): one interface, TinyDB by default."""

from __future__ import annotations

from pathlib import Path

from bot.storage.base import Record, Storage, Table
from bot.storage.tinydb_backend import TinyDBStorage

__all__ = ["Record", "Storage", "Table", "TinyDBStorage", "open_storage"]


def open_storage(path: Path) -> Storage:
    """The default storage for a state file (`WORKSPACE/.state/NAME.json`): TinyDB, one JSON file."""
    return TinyDBStorage(path)
