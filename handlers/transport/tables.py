"""Slack's table block from a header and rows of strings, within what Slack takes (docs.slack.dev table block: at
most 100 rows of at most 20 cells, each cell's text non-empty), the text redacted like everything posted."""

from __future__ import annotations

from typing import Any

from bot.media.redaction import redact

MAX_ROWS, MAX_CELLS, CELL_MAX = 100, 20, 2000  # a cell may hold 10 000 characters; a readable one far fewer


def _cell(text: str) -> dict[str, Any]:
    said = redact(str(text)).strip() or "-"  # a cell's text may not be empty
    return {"type": "raw_text", "text": said if len(said) <= CELL_MAX else said[:CELL_MAX - 1] + "…"}


def table_block(rows: list[list[str]], wrapped: int | None = None) -> dict[str, Any]:
    """The rows (the first is the header) as one table block; columns past 20 and rows past 100 are cut (the caller
    says what it cut, as its last row). `wrapped`: the index of the one long column that wraps (default the last)."""
    kept = [row[:MAX_CELLS] for row in rows[:MAX_ROWS]]
    width = max(len(r) for r in kept)
    kept = [r + ["-"] * (width - len(r)) for r in kept]
    wrap = width - 1 if wrapped is None else wrapped
    settings = [{"is_wrapped": i == wrap} for i in range(width)]
    return {"type": "table", "rows": [[_cell(c) for c in row] for row in kept], "column_settings": settings}
