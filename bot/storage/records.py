"""The one loader of stored objects: every record is read through its model; one that does not fit is set aside.

Rules, watches, scheduled jobs, routes, mutes and false alarms (TinyDB or SQLite), saved pipelines and recipes: a
record of another shape, an unknown kind, a value outside today's bounds (a job every 0.01 minutes saved by an older
version) never stops start-up. It is moved out of the store into `NAME.set-aside.jsonl` beside it (kept whole, with
why, for a person to look at), named in one log line, and noted for the operator (`notes()`, shown by `/vision
status` and posted once to the alert channel at start-up); the rest loads.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import threading
import time
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from bot.storage.base import Record, Storage

log = logging.getLogger(__name__)

T = TypeVar("T")
SUFFIX = ".set-aside.jsonl"
_notes: list[str] = []
_lock = threading.Lock()


def set_aside_path(store: Path) -> Path:
    return store.with_name(store.name + SUFFIX)


def keep(store: Path, table: str, records: Iterable[tuple[Any, str]]) -> int:
    """Append records (with why) to the store's set-aside file, one line for the operator; how many were kept (0 when
    the file could not be written: the note still says what was dropped)."""
    lines = [json.dumps({"table": table, "time": time.time(), "why": why, "record": rec}, default=repr)
             for rec, why in records]
    if not lines:
        return 0
    path = set_aside_path(store)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
        path.chmod(0o600)
    except OSError as exc:  # the record is still dropped from the store: start-up must go on
        log.error("could not keep set-aside records in %s: %s", path.name, exc)
        written = 0
    else:
        written = len(lines)
    first = json.loads(lines[0])["why"]
    note = (f"{len(lines)} stored record{'s' * (len(lines) != 1)} of {store.name} ({table}) did not fit and "
            f"{'were' if len(lines) != 1 else 'was'} set aside in {path.name} (first: {first})")
    log.warning("%s", note)
    with _lock:
        _notes.append(note)
    return written


def note(text: str) -> None:
    """A line for the operator about stored data (a damaged file kept aside), shown with the set-aside ones."""
    with _lock:
        if text not in _notes[-20:]:  # said again by a later read of the same file: once is enough
            _notes.append(text)


def notes(since: int = 0) -> list[str]:
    """What this process set aside or recovered so far (for `/vision status`), or since a `mark()` (what one
    runtime's start-up found, for its notice)."""
    with _lock:
        return list(_notes[since:])


def mark() -> int:
    """Where the notes stand now: `notes(mark())` later gives only what came after."""
    with _lock:
        return len(_notes)


@functools.cache
def _record_model(cls: type) -> type[BaseModel]:
    """A strict pydantic model of a dataclass's fields (their annotated types), to check a stored record with."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (hints[f.name], ...)
    config = ConfigDict(strict=True, extra="ignore", arbitrary_types_allowed=True, allow_inf_nan=False)
    return create_model(f"{cls.__name__}Record", __config__=config, **fields)


def typed(cls: type[T], data: Any) -> T:
    """`data` (a stored record) as the dataclass `cls`, every field of its annotated type (a number that is text, a
    list where a name goes, inf or NaN: ValueError), so what loads can be listed, compared and formatted later."""
    if not isinstance(data, dict):
        raise ValueError(f"a record is an object, not {type(data).__name__}")
    checked = _record_model(cls).model_validate(data)  # type: ignore[arg-type]  # a class is hashable
    return cls(**{f.name: getattr(checked, f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]


def _why(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def load(store: Storage, table: str, parse: Callable[[Record], T], where: Path | None = None) -> list[T]:
    """Every record of `store[table]` that `parse` reads; each one it refuses (any exception) is removed from the
    store and kept in `NAME.set-aside.jsonl` beside it. Never raises for what a record holds."""
    tbl = store.table(table)
    good: list[T] = []
    bad: list[tuple[Record, str]] = []
    for row in tbl.all():
        try:
            good.append(parse(row))
        except Exception as exc:  # noqa: BLE001 - any record of another shape, whatever it makes the parser raise
            bad.append((row, _why(exc)))
    for row, _ in bad:
        try:
            tbl.discard(row)
        except Exception:  # noqa: BLE001 - it stays in the store, and is set aside again next time
            log.exception("could not remove a bad record from %s", table)
    if bad:
        keep(where or store.path, table, bad)
    return good
