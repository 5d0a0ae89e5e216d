"""The kinds of camera fault: each one's alert rule, the rule that says it is over, and its words."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault: `rule` is its health alert's rule id (the event log's `health` type), `back_rule` the one
    that says it is over (another id, so THE cooldown of one does not hold the other back; None: a one-off change),
    `advice` what to do, `back` the words of its end ("video back")."""

    name: str
    rule: str
    back_rule: str | None
    advice: str
    back: str


VIDEO = FaultKind("video", "video_lost", "video_back",
                  "the pipeline reconnects by itself; check the camera's power, network and address", "video back")
FROZEN = FaultKind("frozen", "picture_frozen", "picture_moving",
                   "the camera or its encoder hung: restart the camera", "the picture moves again")
BLACK = FaultKind("black", "picture_black", "picture_back",
                  "check the lens is not covered and the camera has light (or its IR on)", "the picture is back")
GREY = FaultKind("grey", "picture_grey", "picture_colour",
                 "the camera switched to night (IR) mode; counts may differ in it", "colour is back")
SIZE = FaultKind("size", "picture_size", None,
                 "the camera's stream or settings changed: counting lines and zones in pixels may no longer fit", "")
KINDS = {k.name: k for k in (VIDEO, FROZEN, BLACK, GREY, SIZE)}
# Every rule id a camera fault is said with: bot/monitoring/events_log.py files them as `health` events.
RULES = frozenset(r for k in KINDS.values() for r in (k.rule, k.back_rule) if r)


@dataclass(frozen=True)
class Fault:
    """One camera fault: its kind's name (kinds.py), when it began, what it is now in words, and when it ended
    (None: still on). `since` names it: the health check says each (kind, since) once."""

    kind: str
    since: float
    text: str
    ended: float | None = None

    @property
    def about(self) -> FaultKind:
        return KINDS[self.kind]

    def how_long(self) -> str:
        """How long it lasted (ended) or has lasted so far (on: 0 s; see `text`)."""
        return lasted((self.ended or self.since) - self.since)


def lasted(seconds: float) -> str:
    """'42 s', '2 min 13 s', '1 h 5 min', '3 d 2 h'."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min" if s % 3600 // 60 else f"{s // 3600} h"
    return f"{s // 86400} d {s % 86400 // 3600} h" if s % 86400 // 3600 else f"{s // 86400} d"
