"""A search's answer: the moments found (time, camera, what, a link to the frame or clip) and the best pictures.

Built once from the index's hits; every surface shows the same rows: Slack as a table block with the pictures as
image blocks (handlers/answers/moments_blocks.py), the terminal and the model as the text of `moments_text`, REST
and MCP as `as_data`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from bot.monitoring.search.index import Found

if TYPE_CHECKING:
    from bot.monitoring.search.pictures import EventPictures

PICTURES = 3  # the best moments shown as pictures inside the answer
HEADER = ("#", "Time", "Camera", "What", "Link")
WHAT_MAX = 160


@dataclass(frozen=True)
class Moment:
    """One event an answer shows."""

    event_id: str
    time: float
    camera: str
    rule: str
    what: str  # what was seen, else the event's text
    score: float
    link: str | None  # the clip, the alert's frame or the event's picture on the REST API; None: the API is off
    alert_id: str | None = None  # the posted alert's id (Slack links its message), None for a held event
    picture: bytes | None = None  # the event's small picture, for the best PICTURES moments


@dataclass(frozen=True)
class Moments:
    """What a search found, best first; `scope` says the filters in words ('on dock since 09:00')."""

    query: str
    scope: str
    moments: tuple[Moment, ...]
    searched: int  # events the search looked at
    timezone: str = "UTC"  # the workspace's: every surface shows the moments' times in it

    def pictures(self) -> list[Moment]:
        return [m for m in self.moments if m.picture][:PICTURES]

    def as_data(self) -> dict[str, Any]:
        return {"query": self.query, "scope": self.scope, "searched": self.searched, "moments": [
            {"id": m.event_id, "time": m.time, "camera": m.camera, "rule": m.rule, "what": m.what,
             "score": m.score, "link": m.link, "alert_id": m.alert_id, "has_picture": m.picture is not None}
            for m in self.moments]}


def link_of(ev: dict[str, Any], api_base: str | None) -> str | None:
    """The clip (the seconds around it), else the posted alert's frame, else the event's own picture."""
    if not api_base:
        return None
    clip = ev.get("clip_path")
    if isinstance(clip, str) and clip:
        return f"{api_base}/api/clips/{Path(clip).stem}"
    if ev.get("alert_id") and ev.get("has_frame") and not ev.get("held"):
        return f"{api_base}/api/alerts/{ev['alert_id']}/frame"
    return f"{api_base}/api/events/{ev['id']}/picture"


def build(query: str, scope: str, found: list[Found], searched: int, pictures: EventPictures | None,
          api_base: str | None, timezone: str = "UTC") -> Moments:
    out = []
    for n, f in enumerate(found):
        ev = f.event
        what = " ".join(str(ev.get("seen") or ev.get("text") or ev.get("rule") or "").split())
        picture = pictures.get(str(ev["id"])) if pictures is not None and n < PICTURES * 2 else None
        out.append(Moment(str(ev["id"]), float(ev["time"]), str(ev.get("camera") or "-"),
                          str(ev.get("rule") or ev.get("event_type") or ""), what[:WHAT_MAX], f.score,
                          link_of(ev, api_base), str(ev["alert_id"]) if ev.get("alert_id") and not ev.get("held")
                          else None, picture))
    shown = [m for m in out if m.picture][:PICTURES]
    return Moments(query, scope, tuple(m if m in shown else _without_picture(m) for m in out), searched, timezone)


def _without_picture(m: Moment) -> Moment:
    return Moment(m.event_id, m.time, m.camera, m.rule, m.what, m.score, m.link, m.alert_id, None)


def clock(t: float, tz: str) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(tz)).strftime("%a %d %b %H:%M:%S")


def table_rows(m: Moments, tz: str) -> list[list[str]]:
    """The header and one row per moment: the Slack table and the terminal show the same cells."""
    return [list(HEADER)] + [[str(n), clock(x.time, tz), x.camera, x.what or x.rule, x.link or f"event {x.event_id}"]
                             for n, x in enumerate(m.moments, 1)]


def title(m: Moments) -> str:
    found = f"{len(m.moments)} moment{'s' * (len(m.moments) != 1)}"
    return f"{found} for “{m.query}”{' ' + m.scope if m.scope else ''} (of {m.searched} events)"


def moments_text(m: Moments, tz: str) -> str:
    """The answer in plain text: the title, then one line per moment (the picture's marker where one is shown)."""
    if not m.moments:
        where = f" {m.scope}" if m.scope else ""
        return (f"Nothing in the event log matches “{m.query}”{where} ({m.searched} events searched). Try other "
                "words (a class, a colour, a direction), a wider time, or another camera.")
    lines = [title(m) + ":"]
    for n, x in enumerate(m.moments, 1):
        pic = " [picture]" if x.picture else ""
        link = f" · {x.link}" if x.link else ""
        lines.append(f"{n}. {clock(x.time, tz)} {x.camera} — {x.what or x.rule} ({x.rule}, event {x.event_id}, "
                     f"score {x.score:.2f}){pic}{link}")
    return "\n".join(lines)
