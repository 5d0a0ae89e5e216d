"""The storage interface the state stores use, in the spirit of slack-machine's storage/backends/base.py.

A store holds named tables of flat JSON records; records are matched by field equality. A backend (TinyDB, SQLite,
one day Redis) implements these few methods and the alert router, monitor and scheduler run on it unchanged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Literal

Record = dict[str, Any]
Backend = Literal["tinydb", "sqlite"]  # storage.backend: which class open_storage builds


class Table(ABC):
    """One named table of records."""

    @abstractmethod
    def all(self) -> list[Record]:
        """Every record, in insertion order."""

    @abstractmethod
    def get(self, **match: Any) -> Record | None:
        """The first record whose fields equal `match`, or None."""

    @abstractmethod
    def upsert(self, record: Record, **match: Any) -> None:
        """Replace the records matching `match` with `record` (fields merged), or insert it if none match."""

    @abstractmethod
    def remove(self, **match: Any) -> int:
        """Remove the records matching `match`; how many went."""

    @abstractmethod
    def discard(self, record: Record) -> int:
        """Remove the records equal to `record` as a whole (one of another shape may lack every key field)."""


class Storage(ABC):
    """A set of named tables that outlives the process, in a file at `path`."""

    path: Path

    @abstractmethod
    def table(self, name: str) -> Table:
        """The table called `name` (created empty on first use)."""

    @abstractmethod
    def names(self) -> list[str]:
        """The tables that hold records (to copy a store to another backend)."""

    @abstractmethod
    def close(self) -> None:
        """Release files or connections; safe to call twice."""
