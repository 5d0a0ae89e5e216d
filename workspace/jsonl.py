"""Append-only JSON-lines files read back after a crash: blank lines passed over, torn or foreign lines skipped."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def numbered_records(text: str, skipped: Callable[[int], None] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number from 1, object) for each line of `text` that is a JSON object; a line that is not (torn by a
    crash, or written by something else) is skipped and its number given to `skipped`; blank lines are not."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if isinstance(rec, dict):
            yield n, rec
        elif skipped is not None:
            skipped(n)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order; [] when it is missing or cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [rec for _, rec in numbered_records(text)]
