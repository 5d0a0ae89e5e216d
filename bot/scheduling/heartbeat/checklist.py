"""HEARTBEAT.md items with a schedule tag ('[every 2h]', '[at 18:00]': bot.objects.when) and when each is due."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.objects.when import TAG, from_match

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


@dataclass(frozen=True)
class ChecklistItem:
    """One scheduled checklist line; untagged lines are only looked at when tier 1 has news."""

    text: str
    every: timedelta | None = None
    at: str | None = None  # "HH:MM" in the heartbeat time zone

    @property
    def key(self) -> str:
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()[:12]

    def due(self, now: datetime, last_done: float | None) -> bool:
        """Whether the item should be checked at `now` (tz-aware), given when it was last checked."""
        if self.every is not None:
            return last_done is None or now.timestamp() - last_done >= self.every.total_seconds()
        if self.at is not None:
            hh, mm = (int(x) for x in self.at.split(":"))
            slot = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
            return now >= slot and (last_done is None or last_done < slot.timestamp())
        return False


def scheduled_items(checklist: str) -> list[ChecklistItem]:
    """The tagged items of a HEARTBEAT.md text (comments ignored)."""
    items: list[ChecklistItem] = []
    for line in _COMMENT.sub("", checklist).splitlines():
        m = _ITEM.match(line)
        tag = TAG.search(m.group(1)) if m else None
        if not m or not tag:
            continue
        try:
            when = from_match(tag)
        except ValueError:  # '[at 25:00]': not a schedule, so the line stays an ordinary item
            continue
        text = TAG.sub("", m.group(1)).strip()
        if "at" in when:
            items.append(ChecklistItem(text, at=when["at"]))
        else:
            items.append(ChecklistItem(text, every=timedelta(minutes=when["every_minutes"])))
    return items
