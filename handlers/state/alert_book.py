"""The alerts the Slack sink posted: where each message is and what it showed, so it can be updated in place.

A tier-2 summary rebuilds the message from this record (chat.update replaces the blocks), and a False alarm
click trusts this record, never the button's value, for what the alert was. Kept in `.state/slack_alerts.json`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.monitoring.alerts import Alert
from bot.storage import Backend, Storage, open_storage, records

MAX_KEPT = 500  # alerts older than the newest 500 cannot be updated or marked any more


@dataclass(frozen=True)
class PostedAlert:
    """One alert message: its place in Slack and what it shows."""

    alert_id: str
    channel: str
    ts: str
    camera: str
    rule: str
    text: str
    counts: dict[str, int] = field(default_factory=dict)
    time: float = 0.0
    pipeline_id: str | None = None
    file_id: str | None = None  # the uploaded frame its image block shows
    summary: str | None = None  # the tier-2 summary added in place
    thread_ts: str | None = None  # the thread it was posted into (a watch's); None: it is a thread's root
    check: str | None = None  # the model's look at it, one line (verified alerts; its words are the model's)
    marked: str | None = None  # who marked it a false alarm and what the rule does now (everyone sees it)

    @classmethod
    def of(cls, alert: Alert, channel: str, ts: str, file_id: str | None) -> PostedAlert:
        return cls(alert.alert_id, channel, ts, alert.camera, alert.rule, alert.text, dict(alert.counts), alert.time,
                   alert.pipeline_id, file_id, thread_ts=alert.thread_ts,
                   check=alert.check.line() if alert.check is not None else None)

    @property
    def root(self) -> str:
        """The thread its clip and follow-ups go into."""
        return self.thread_ts or self.ts

    def with_summary(self, summary: str) -> PostedAlert:
        return replace(self, summary=summary)


def _posted(row: dict[str, Any]) -> PostedAlert:
    """A stored record (TypeError / ValueError for one of another shape)."""
    posted = PostedAlert(**{k: v for k, v in row.items() if k in PostedAlert.__dataclass_fields__})
    if not all(isinstance(getattr(posted, k), str) for k in ("alert_id", "channel", "ts", "camera", "rule", "text")):
        raise ValueError("a posted alert's ids and text are strings")
    if not all(isinstance(getattr(posted, k), (str, type(None))) for k in ("check", "marked", "summary")):
        raise ValueError("a posted alert's check, mark and summary are lines")
    return posted


class AlertBook:
    """PostedAlert records by alert id, in the bot's storage; the newest MAX_KEPT are kept."""

    def __init__(self, path: Path, storage: Storage | None = None, backend: Backend = "tinydb") -> None:
        self._store = storage if storage is not None else open_storage(path, backend)
        self._table = self._store.table("posted")
        records.load(self._store, "posted", _posted)  # one of another shape is set aside: the reads below trust them

    def put(self, posted: PostedAlert) -> None:
        self._table.upsert(asdict(posted), alert_id=posted.alert_id)
        rows = self._table.all()
        for old in rows[: max(0, len(rows) - MAX_KEPT)]:
            self._table.discard(old)

    def get(self, alert_id: str) -> PostedAlert | None:
        if not alert_id:
            return None
        row: dict[str, Any] | None = self._table.get(alert_id=alert_id)
        try:
            return _posted(row) if row is not None else None
        except (TypeError, ValueError):  # written since start-up by another version: not this alert's record
            return None

    def close(self) -> None:
        self._store.close()


async def permalinks(client: Any, book: AlertBook | None, alert_ids: Iterable[str]) -> dict[str, str]:
    """alert id -> the link of the alert message this bot posted (its frame is in it), for a digest's or a search's
    answer; alerts it did not post, or whose link Slack will not give (message deleted, channel left), are left out."""
    links: dict[str, str] = {}
    for alert_id in alert_ids:
        posted = book.get(alert_id) if book is not None and alert_id else None
        if posted is None or not posted.ts:
            continue
        try:
            resp = await client.chat_getPermalink(channel=posted.channel, message_ts=posted.ts)
        except SlackApiError:
            continue
        if resp.get("permalink"):
            links[alert_id] = str(resp["permalink"])
    return links
