"""When "since" starts: '2h', 'HH:MM', 'yesterday 18:00', an ISO time or seconds ago, read as a time in the
workspace's timezone, for the event log's readers: `/vision digest`, `get_events`, `GET /api/events`."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

SINCE_FORMS = ("'2h', '90m' or '1d' ago, 'HH:MM' (the last one: yesterday's if still ahead today), 'yesterday 18:00', "
               "or an ISO time like 2026-05-01T09:00")
_AGO = re.compile(r"(\d+(?:\.\d+)?)\s*(s|sec|secs|m|min|mins|h|hr|hrs|hours?|d|days?)")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?")


def _words(since: str) -> str:
    return " ".join(since.strip().lower().split()).removeprefix("since ")  # '/vision digest since 2h'


def since_note(since: str, timezone: str, start: float, now: float) -> str:
    """'since yesterday 23:59' when a bare 'HH:MM' was still ahead today, so `parse_since` read it as yesterday's
    (say so: 'since 23:59' alone would look like a window in the future); '' otherwise."""
    m = _CLOCK.fullmatch(_words(since))
    tz = ZoneInfo(timezone)
    if m is None or datetime.fromtimestamp(start, tz).date() == datetime.fromtimestamp(now, tz).date():
        return ""
    return f"since yesterday {datetime.fromtimestamp(start, tz):%H:%M}"


def parse_since(since: str | float | None, timezone: str, now: float, default_seconds: float = 86400.0) -> float:
    """A start time from '2h'/'90m'/'1d' ago, 'HH:MM' or 'H' (today in the workspace timezone; yesterday if still
    ahead), 'yesterday [HH:MM]', an ISO time, or seconds ago (a number). None: `default_seconds` ago.
    Raises ValueError with one line saying what to write.
    """
    if since is None:
        return now - default_seconds
    if isinstance(since, (int, float)) and not isinstance(since, bool):
        return now - max(0.0, float(since))
    text = _words(str(since))
    tz = ZoneInfo(timezone)
    if re.fullmatch(r"\d{3,}(\.\d+)?", text):  # '9' or '09' is an hour ('since 9'); '3600' is seconds
        return now - float(text)
    if m := _AGO.fullmatch(text.removesuffix(" ago")):
        return now - float(m[1]) * _UNIT[m[2][0]]
    days_back = 0
    if text.startswith("yesterday"):
        days_back, text = 1, text.removeprefix("yesterday").strip() or "0:00"
    if m := _CLOCK.fullmatch(text):
        hour, minute = int(m[1]), int(m[2] or 0)
        if hour < 24 and minute < 60:
            today = datetime.fromtimestamp(now, tz).replace(hour=hour, minute=minute, second=0, microsecond=0)
            if days_back:
                return (today - timedelta(days=days_back)).timestamp()
            return (today if today.timestamp() <= now else today - timedelta(days=1)).timestamp()
    raw = str(since).strip()
    try:
        if days_back:
            raise ValueError(raw)
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"I cannot read {raw[:40]!r} as a time; write {SINCE_FORMS}.") from None
    return (at if at.tzinfo else at.replace(tzinfo=tz)).timestamp()
