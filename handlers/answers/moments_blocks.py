"""Block Kit for a search's answer: a title, Slack's table block (time, camera, what, link to the frame or clip), the
best moments' pictures as image blocks, and the plain text as the fallback.

docs.slack.dev table block: at most 100 rows of at most 20 cells, one table per message; a cell is raw_text or
rich_text (a link). Image blocks show files uploaded unshared (handlers/transport/uploads.py).
"""

from __future__ import annotations

import logging
from typing import Any

from bot.media.redaction import redact
from bot.monitoring.search.moments import Moments, clock, moments_text, table_rows, title
from handlers.state.alert_book import AlertBook, permalinks
from handlers.transport.mrkdwn import SECTION_LIMIT, escape
from handlers.transport.tables import link_cell
from handlers.transport.tables import table_block as rows_table
from handlers.transport.uploads import upload_unshared

log = logging.getLogger(__name__)

CELL_MAX = 300  # a moment's words in one cell
FALLBACK_MAX = 3000


def table_block(m: Moments, tz: str, posts: dict[str, str]) -> dict[str, Any]:
    """Header + one row per moment (time right, what it was wrapped); the last cell links the alert's message, else
    its frame or clip (REST)."""
    rows = table_rows(m, tz)
    out: list[list[str | dict[str, Any]]] = [list(rows[0])]
    for moment, row in zip(m.moments, rows[1:], strict=False):
        post, link = posts.get(moment.alert_id or ""), moment.link
        last: str | dict[str, Any] = row[-1]
        if post:
            last = link_cell(post, "alert")
        elif link:
            last = link_cell(link, "clip" if "/api/clips/" in link else "frame")
        out.append([*row[:-1], last])
    return rows_table(out, wrapped=3, right=(0,), limit=CELL_MAX)


async def message_links(client: Any, book: AlertBook | None, m: Moments) -> dict[str, str]:
    """alert id -> the link of the alert message this bot posted (left out when Slack will not give it)."""
    return await permalinks(client, book, [moment.alert_id for moment in m.moments if moment.alert_id])


async def upload_pictures(client: Any, m: Moments) -> dict[str, str]:
    """event id -> the file id of its picture, uploaded unshared (one that fails is left out)."""
    out: dict[str, str] = {}
    for moment in m.pictures():
        file_id = await upload_unshared(client, moment.picture or b"", moment.camera, moment.time)
        if file_id:
            out[moment.event_id] = file_id
    return out


def moments_blocks(m: Moments, tz: str, files: dict[str, str], posts: dict[str, str] | None = None
                   ) -> list[dict[str, Any]]:
    """The answer: its title, the table, the pictures (each titled with its row), a line on where it comes from."""
    if not m.moments:
        return [{"type": "section", "text": {"type": "mrkdwn", "text": escape(moments_text(m, tz))[:SECTION_LIMIT]}}]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(title(m))}*"[:SECTION_LIMIT]}},
        table_block(m, tz, posts or {})]
    for n, moment in enumerate(m.moments, 1):
        file_id = files.get(moment.event_id)
        if file_id:
            caption = redact(f"#{n} {clock(moment.time, tz)} {moment.camera}: {moment.what or moment.rule}")
            blocks.append({"type": "image", "slack_file": {"id": file_id}, "alt_text": caption[:2000],
                           "title": {"type": "plain_text", "text": caption[:200]}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": (
        "From the event log: each event's words (class, colour, size, place, direction; the model's words when "
        "it looked) ranked by keywords and meaning.")}]})
    return blocks


def moments_fallback(m: Moments, tz: str) -> str:
    return escape(moments_text(m, tz))[:FALLBACK_MAX]


async def moments_message(client: Any, m: Moments, tz: str, book: AlertBook | None = None) -> dict[str, Any]:
    """`text` and `blocks` of the answer, its pictures uploaded and its alerts linked."""
    files = await upload_pictures(client, m)
    posts = await message_links(client, book, m)
    return {"text": moments_fallback(m, tz), "blocks": moments_blocks(m, tz, files, posts)}
