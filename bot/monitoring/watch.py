"""A watch task's record: what to wait for on which camera, until when, where it answers; the bounds of its time."""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass
from typing import Any

from bot.monitoring.watch_conditions import Condition, condition_from_dict
from bot.objects.owner import Owner
from bot.objects.text import check_name
from bot.objects.watch import DEFAULT_SECONDS, MAX_SECONDS, MIN_SECONDS

__all__ = ["ANSWERED", "DEFAULT_SECONDS", "EXPIRED", "MAX_SECONDS", "MIN_SECONDS", "Watch", "parse_duration", "span"]
EXPIRED = "watch_expired"  # the rule id of an expiry line (a notice, not a detection)
ANSWERED = "watch:"  # the rule id of a watch's answer: this prefix and the watch id
_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?)$",
                       re.I)
_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")


def parse_duration(raw: str) -> float:
    """'30s', '90m', '2h' -> seconds (ValueError saying what is accepted); the bounds are the model's
    (bot/objects/watch.py WatchSpec), so every door says the same."""
    m = _DURATION.match(raw.strip())
    if not m:
        raise ValueError(f"`for` takes a duration like 30s, 90m or 2h, not {raw!r}.")
    unit = m["unit"][0].lower()
    return float(m["n"]) * {"s": 1, "m": 60, "h": 3600}[unit]


def span(seconds: float) -> str:
    """'45 s', '90 min', '2 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h".replace(".0 h", " h")


@dataclass(frozen=True)
class Watch:
    """One watch: what to wait for on which camera, until when, and where its answer goes (channel None: the
    camera's alert route; thread_ts: the thread it was asked in)."""

    id: str
    camera: str
    condition: Condition
    created_at: float
    expires_at: float
    confirm: bool = False
    user_id: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    about: str = ""  # the asker's own words ("a truck reaches the dock"), shown and given to the model with confirm
    owner: Owner | None = None  # who asked and where (None: the operator): who may cancel it, whose share it spends

    @staticmethod
    def new_id() -> str:
        return "w" + uuid.uuid4().hex[:6]

    @property
    def mention(self) -> str:
        return f"<@{self.user_id}> " if self.user_id and _USER.match(self.user_id) else ""

    def line(self, now: float) -> str:
        """'`w1a2b3c` on *dock*: a truck appears (asked by <@U1>), 1.9 h left, confirmed by the model'."""
        what = f"{self.about} — {self.condition.describe()}" if self.about else self.condition.describe()
        who = f" (asked by <@{self.user_id}>)" if self.mention else ""
        checked = ", confirmed by the model before it tells" if self.confirm else ""
        return f"`{self.id}` on *{self.camera}*: {what}{who}, {span(max(0.0, self.expires_at - now))} left{checked}"

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "camera": self.camera, "condition": self.condition.as_dict(),
                "created_at": self.created_at, "expires_at": self.expires_at, "confirm": self.confirm,
                "user_id": self.user_id, "channel": self.channel, "thread_ts": self.thread_ts, "about": self.about,
                "owner": self.owner.model_dump() if self.owner is not None else None}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Watch:
        """A stored watch (KeyError / TypeError / ValueError for a record of another shape: set aside)."""
        owner = Owner.model_validate(r["owner"]) if isinstance(r.get("owner"), dict) else None
        texts = {k: r.get(k) for k in ("user_id", "channel", "thread_ts")}
        if any(v is not None and not isinstance(v, str) for v in texts.values()) or not isinstance(r.get("about", ""), str):
            raise ValueError("a watch's asker, place and words are text")
        times = float(r["created_at"]), float(r["expires_at"])
        if not all(math.isfinite(t) and 0 <= t < 1e11 for t in times):
            raise ValueError("a watch's times are out of bounds")
        return cls(check_name(str(r["id"]), "a watch id"), check_name(str(r["camera"]), "a camera"),
                   condition_from_dict(r["condition"]), *times, bool(r.get("confirm")), texts["user_id"],
                   texts["channel"], texts["thread_ts"], str(r.get("about") or "")[:200], owner)
