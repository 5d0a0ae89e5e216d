"""The Slack emulator's checks of table and data visualization blocks, as docs.slack.dev documents them.

Table block (docs.slack.dev/reference/block-kit/blocks/table-block): `rows` 1-100 arrays of 1-20 cells, a cell
`raw_text` (non-empty `text`) or `rich_text` (`elements`); `column_settings` at most 20 items, each null or
{`align`: left|center|right, `is_wrapped`: bool}; `block_id` <= 255. One table per message: Slack refuses a second
with `invalid_attachments` (`only_one_table_allowed`).
Data visualization block (.../data-visualization-block): `title` 1-50 characters, `chart` of type pie (1-6
`segments` {label <= 20, value > 0}) or bar/area/line (1-6 `series` with unique `name` <= 20 and 1-20 `data`
points {label <= 20 that is one of `axis_config.categories`, numeric value}; `axis_config` {categories, each <= 20;
optional `x_label`/`y_label` <= 50}); at most two per message. A field neither reference lists is refused.
"""

from __future__ import annotations

from typing import Any

MAX_ROWS, MAX_CELLS, MAX_COLUMN_SETTINGS = 100, 20, 20
CHART_TITLE, LABEL, AXIS_LABEL = 50, 20, 50
MAX_SERIES, MAX_POINTS, MAX_CHARTS = 6, 20, 2


class BlockError(ValueError):
    """A block Slack would refuse; `error` is Slack's error code."""

    def __init__(self, error: str = "invalid_blocks") -> None:
        super().__init__(error)
        self.error = error


def check_message_tables(blocks: list[Any]) -> None:
    """Every table and chart block well formed; one table and at most two charts in the message."""
    kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
    if kinds.count("table") > 1:
        raise BlockError("invalid_attachments")  # Slack: only_one_table_allowed
    if kinds.count("data_visualization") > MAX_CHARTS:
        raise BlockError()
    for b in blocks:
        if isinstance(b, dict) and b.get("type") == "table":
            check_table(b)
        elif isinstance(b, dict) and b.get("type") == "data_visualization":
            check_chart(b)


def _fields(obj: dict[str, Any], allowed: set[str]) -> None:
    """Slack refuses a block object with a field its reference does not list (a misspelt `column_setting`)."""
    if set(obj) - allowed:
        raise BlockError()


def _text(v: Any, most: int) -> bool:
    return isinstance(v, str) and 0 < len(v) <= most


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_table(block: dict[str, Any]) -> None:
    _fields(block, {"type", "block_id", "rows", "column_settings"})
    rows, settings = block.get("rows"), block.get("column_settings", [])
    if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_ROWS:
        raise BlockError()
    if "block_id" in block and not _text(block["block_id"], 255):
        raise BlockError()
    for row in rows:
        if not isinstance(row, list) or not 1 <= len(row) <= MAX_CELLS:
            raise BlockError()
        for cell in row:
            ok = isinstance(cell, dict) and (
                (cell.get("type") == "raw_text" and _text(cell.get("text"), 10_000))
                or (cell.get("type") == "rich_text" and isinstance(cell.get("elements"), list)))
            if not ok:
                raise BlockError()
    if not isinstance(settings, list) or len(settings) > MAX_COLUMN_SETTINGS:
        raise BlockError()
    for s in settings:
        if s is None:
            continue
        if (not isinstance(s, dict) or set(s) - {"align", "is_wrapped"}
                or s.get("align", "left") not in ("left", "center", "right")
                or not isinstance(s.get("is_wrapped", False), bool)):
            raise BlockError()


def check_chart(block: dict[str, Any]) -> None:
    _fields(block, {"type", "block_id", "title", "chart"})
    chart = block.get("chart")
    if not _text(block.get("title"), CHART_TITLE) or not isinstance(chart, dict):
        raise BlockError()
    _fields(chart, {"type", "segments"} if chart.get("type") == "pie" else {"type", "series", "axis_config"})
    if chart.get("type") == "pie":
        segments = chart.get("segments")
        if not isinstance(segments, list) or not 1 <= len(segments) <= MAX_SERIES or not all(
                isinstance(s, dict) and _text(s.get("label"), LABEL) and _number(s.get("value")) and s["value"] > 0
                for s in segments):
            raise BlockError()
        return
    if chart.get("type") not in ("bar", "area", "line"):
        raise BlockError()
    _check_series(chart.get("series"), chart.get("axis_config"))


def _check_series(series: Any, axis: Any) -> None:
    if not isinstance(axis, dict) or not isinstance(axis.get("categories"), list):
        raise BlockError()
    _fields(axis, {"categories", "x_label", "y_label"})
    categories = axis["categories"]
    if not categories or not all(_text(c, LABEL) for c in categories):
        raise BlockError()
    if any(k in axis and not _text(axis[k], AXIS_LABEL) for k in ("x_label", "y_label")):
        raise BlockError()
    if not isinstance(series, list) or not 1 <= len(series) <= MAX_SERIES:
        raise BlockError()
    names = [s.get("name") if isinstance(s, dict) else None for s in series]
    if len(set(names)) != len(names) or not all(_text(n, LABEL) for n in names):
        raise BlockError()
    for s in series:
        _fields(s, {"name", "data"})
        data = s.get("data")
        if not isinstance(data, list) or not 1 <= len(data) <= MAX_POINTS:
            raise BlockError()
        for p in data:
            if not (isinstance(p, dict) and set(p) == {"label", "value"} and _text(p.get("label"), LABEL)
                    and p["label"] in categories and _number(p.get("value"))):
                raise BlockError()
