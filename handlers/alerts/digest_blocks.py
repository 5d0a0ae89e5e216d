"""Block Kit for a digest: a title, Slack's table block (per camera), a line chart of counts over time (Slack's data
visualization block), the alerts with their frame and clip links; the plain text rides along as the fallback."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.media.redaction import redact
from bot.monitoring.digest import Digest
from bot.monitoring.digest_text import alert_text, bucket_labels, digest_text, same_day, table_rows, title
from handlers.state.alert_book import AlertBook, permalinks
from handlers.transport.mrkdwn import SECTION_LIMIT, escape
from handlers.transport.tables import table_block as rows_table

# docs.slack.dev: data visualization title <= 50, series name, data label and category <= 20 characters, 1-6 series
# of 1-20 points (the table's bounds: handlers/transport/tables.py)
CHART_TITLE_MAX = 50
CHART_LABEL_MAX = 20
MAX_POINTS = 20
FALLBACK_MAX = 3000


def table_block(d: Digest) -> dict[str, Any]:
    """One row per camera (its name wraps), its counts aligned right."""
    rows = table_rows(d)
    return rows_table(rows, wrapped=0, right=range(1, len(rows[0])))


def chart_block(d: Digest, tz: str) -> dict[str, Any] | None:
    """A line chart of the series, or None when there is no trend to draw (one bucket, or nothing counted)."""
    if len(d.bucket_starts) < 2 or not any(sum(v) for _, v in d.series):
        return None
    labels = [label[:CHART_LABEL_MAX] for label in bucket_labels(d, tz)][-MAX_POINTS:]
    series: list[dict[str, Any]] = []
    names: set[str] = set()
    for name, values in d.series:
        short = _short(redact(name)) or "-"
        if short in names:  # series names must be unique: a cut name that collides is numbered
            short = f"{short[:CHART_LABEL_MAX - 3]}#{len(series) + 1}"
        names.add(short)
        points = list(values)[-MAX_POINTS:]
        series.append({"name": short, "data": [{"label": lab, "value": v} for lab, v in zip(labels, points,
                                                                                             strict=True)]})
    crossings = any(name.endswith((" in", " out")) for name, _ in d.series)
    what = "Line crossings" if crossings else "Events"
    return {"type": "data_visualization", "title": f"{what} over time"[:CHART_TITLE_MAX],
            "chart": {"type": "line", "series": series,
                      "axis_config": {"categories": labels, "x_label": f"time ({tz})"[:CHART_TITLE_MAX],
                                      "y_label": "crossings" if crossings else "events"}}}


def _short(name: str) -> str:
    """A series name within Slack's 20 characters, the camera's end (where cam1 and cam2 differ) and the last word
    ('in', 'out') kept: '…dock-north-3 in'."""
    if len(name) <= CHART_LABEL_MAX:
        return name
    head, _, tail = name.rpartition(" ")
    if not head or len(tail) > CHART_LABEL_MAX // 2:
        return "…" + name[-(CHART_LABEL_MAX - 1):]
    return f"…{head[-(CHART_LABEL_MAX - len(tail) - 2):]} {tail}"


async def message_links(client: Any, book: AlertBook | None, d: Digest) -> dict[str, str]:
    """alert id -> the link of the alert message this bot posted (a held alert was not posted)."""
    return await permalinks(client, book, [a.alert_id for a in d.alerts if not a.held])


def _alerts_section(d: Digest, tz: str, posts: dict[str, str]) -> dict[str, Any] | None:
    if not d.alerts:
        return None
    head = "*Alerts*" + (f" (latest {len(d.alerts)}; {d.more_alerts} earlier)" if d.more_alerts else "")
    lines = [head]
    for a in d.alerts:
        links = " · ".join(x for x in (f"<{posts[a.alert_id]}|alert>" if a.alert_id in posts else "",
                                       f"<{a.frame_url}|frame>" if a.frame_url else "",
                                       f"<{a.clip}|clip>" if a.clip and a.clip.startswith("http") else
                                       escape(a.clip or "")) if x)
        bare = alert_text(replace(a, frame_url=None, clip=None), tz, not same_day(d.start, d.end, tz))  # links: Slack's
        lines.append(f"• {escape(bare)}" + (f" — {links}" if links else ""))
    text = "\n".join(lines)
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}}


def digest_blocks(d: Digest, tz: str, posts: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The digest message: its title, the table, the chart, the alerts (linked to their messages: `posts`, from
    `message_links`); a quiet window is one line."""
    head = {"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(title(d, tz))}*"[:SECTION_LIMIT]}}
    if d.empty:
        return [{"type": "section", "text": {"type": "mrkdwn", "text": escape(digest_text(d, tz))[:SECTION_LIMIT]}}]
    blocks = [head, table_block(d)]
    blocks += [b for b in (chart_block(d, tz), _alerts_section(d, tz, posts or {})) if b is not None]
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": (
        "From the event log: Held = not posted (cooldown, mute, quiet hours); False alarms = marked with the "
        "False alarm button; In/Out = line crossings.")}]})
    return blocks


def digest_fallback(d: Digest, tz: str) -> str:
    """The plain text Slack shows where blocks are not drawn (notifications, old clients), with its sparklines."""
    return escape(digest_text(d, tz))[:FALLBACK_MAX]
