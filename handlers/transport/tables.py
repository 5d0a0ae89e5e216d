"""Slack's table block from a header and rows, within what Slack takes (docs.slack.dev table block: at most 100 rows
of at most 20 cells, each cell raw_text or rich_text, a raw cell's text non-empty), the text redacted like everything
posted. One builder for every table the bot posts (a command's reply, a digest, a search's moments)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.media.redaction import redact

MAX_ROWS, MAX_CELLS, CELL_MAX = 100, 20, 2000  # a cell may hold 10 000 characters; a readable one far fewer

Cell = str | dict[str, Any]  # a string (a raw_text cell) or a cell already built (link_cell)


def cell(text: str, limit: int = CELL_MAX) -> dict[str, Any]:
    """A raw_text cell: redacted, never empty, cut to `limit` characters."""
    said = redact(str(text)).strip() or "-"  # a cell's text may not be empty
    return {"type": "raw_text", "text": said if len(said) <= limit else said[:limit - 1] + "…"}


def link_cell(url: str, label: str) -> dict[str, Any]:
    """A rich_text cell holding one link (the alert's message, a frame, a clip)."""
    return {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
        {"type": "link", "url": url, "text": label}]}]}


def table_block(rows: Sequence[Sequence[Cell]], wrapped: int | None = None, right: Sequence[int] = (),
                limit: int = CELL_MAX) -> dict[str, Any]:
    """The rows (the first is the header) as one table block; columns past 20 and rows past 100 are cut (the caller
    says what it cut, as its last row). `wrapped`: the index of the one long column that wraps (default the last);
    `right`: the columns aligned right (numbers, times); `limit`: a raw cell's characters at most."""
    kept: list[list[Cell]] = [list(row[:MAX_CELLS]) for row in rows[:MAX_ROWS]]
    width = max(len(r) for r in kept)
    kept = [r + ["-"] * (width - len(r)) for r in kept]
    wrap = width - 1 if wrapped is None else wrapped
    settings = [{"align": "right" if i in right else "left", "is_wrapped": i == wrap} for i in range(width)]
    return {"type": "table", "rows": [[c if isinstance(c, dict) else cell(c, limit) for c in row] for row in kept],
            "column_settings": settings}
