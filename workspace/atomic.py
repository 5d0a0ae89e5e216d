"""Files that survive kill -9: written whole to a temp file, flushed to disk, then renamed over the old one;
read back with the damaged ones kept aside and their last good copy used (`read_state`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _replace(path: Path, raw: bytes, sync: bool = True) -> None:
    """`raw` written to a temporary file beside `path`, flushed to the disk (`sync`), then renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_atomic(path: Path, data: str | bytes, keep_copy: bool = False) -> None:
    """Replace `path` with `data` so a reader, or the next start after a crash, sees the old file or the new one,
    never a half-written one. keep_copy: the same data is also written to `<name>.bak`, a file of its own, the
    last good state to fall back on if the file is ever damaged from outside (a tool writing over it, a bad copy).
    It is this save's data, not the one before: a fallback one save behind brought back a pipeline the user had just
    stopped. Its own file, not a hard link: damage written into the file in place would reach a link too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    _replace(path, raw)
    if keep_copy:
        # not flushed to the disk itself: a save costs one fsync, as before (usage.json is saved after every Claude
        # call); a power cut that loses the copy finds the file it copies saved
        with contextlib.suppress(OSError):  # the file itself is saved; a .bak that cannot be written waits for the next
            _replace(path.with_name(path.name + ".bak"), raw, sync=False)
    with contextlib.suppress(OSError):  # the rename itself reaches the disk with its directory
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


DAMAGED = object()  # what load_json returns for a file that exists but does not parse as the expected kind


def load_json(path: Path, kind: type = dict, fits: Callable[[Any], bool] | None = None) -> Any:
    """The JSON in `path` if it parses as `kind` (and `fits`, a check of its shape); None if the file is missing or
    empty; DAMAGED otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return DAMAGED
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return DAMAGED
    return data if isinstance(data, kind) and (fits is None or fits(data)) else DAMAGED


def keep_aside(path: Path) -> Path:
    """Move a damaged state file to `<name>.corrupt-<time>` for a person to look at; the name it got."""
    kept = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    with contextlib.suppress(OSError):
        path.replace(kept)
    return kept


def read_state(path: Path, kind: type = dict, log: logging.Logger | None = None,
               fits: Callable[[Any], bool] | None = None) -> tuple[Any, str | None]:
    """(data, note) for a state file written with `write_atomic(keep_copy=True)`, damaged or not.

    A damaged file is moved aside as `<name>.corrupt-<time>` (kept for a person to look at) and its last good copy,
    `<name>.bak`, is used and written back; data is None when there is neither. note is the one line start-up logs
    (None when the file was fine).
    """
    data = load_json(path, kind, fits)
    if data is not DAMAGED:
        return data, None
    kept = keep_aside(path)
    backup = load_json(path.with_name(path.name + ".bak"), kind, fits)
    if backup is DAMAGED or backup is None:
        note, backup = f"{path.name} was damaged; kept as {kept.name}, starting it empty", None
    else:
        note = f"{path.name} was damaged; kept as {kept.name}, continuing from its last good copy"
        with contextlib.suppress(OSError):
            write_atomic(path, json.dumps(backup), keep_copy=False)
    (log or logging.getLogger(__name__)).error("%s", note)
    return backup, note
