"""One alert as every sink gets it, the router's verdict on it, and the shapes of the sinks that deliver it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.monitoring.digest import Digest
    from bot.monitoring.verify import Check


def new_alert_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Alert:
    """One alert: what happened, where, and the evidence."""

    camera: str
    rule: str
    text: str  # what happened, without the camera: every sink shows alert.camera beside it
    counts: dict[str, int] = field(default_factory=dict)
    time: float = field(default_factory=time.time)
    frame: bytes | None = None  # annotated JPEG
    pipeline_id: str | None = None
    summary: str | None = None  # tier-2 one-line summary
    cooldown_seconds: float | None = None  # the rule's own cooldown; None: the router's default
    clip_path: str | None = None  # MP4 of the seconds around the event (WORKSPACE/clips/<clip id>.mp4), if clips are on
    alert_id: str = field(default_factory=new_alert_id)  # how a later summary or a click names this alert
    about: tuple[str, ...] = ()  # a tier-2 summary: the alert ids it is about (a sink may update those in place)
    channel: str | None = None  # an explicit target (a scheduled job's `to=`) instead of the camera's route
    thread_ts: str | None = None  # ... and a thread in it
    notify: str | None = None  # a person who asked for it (a watch): told in a DM when the channel refuses the post
    digest: Digest | None = None  # a scheduled digest: its numbers, for a sink that draws a table (text says them)
    check: Check | None = None  # the model's look at it (verified alerts: bot/monitoring/verify.py)
    # What the frame shows, in words from the detections (bot/monitoring/search/describe.py): what search ranks
    seen: str | None = None
    box: tuple[float, float, float, float] | None = None  # its main object, fractions of the frame: the picture's crop

    def as_dict(self, with_frame: bool = True) -> dict[str, Any]:
        d = asdict(self)
        d.pop("digest")  # the text says it; the numbers stay in the event log they came from
        if d.get("check") is None:
            d.pop("check")  # only a checked alert says what the model saw
        if not with_frame:
            d.pop("frame")
        return d


@dataclass(frozen=True)
class Verdict:
    """The router's decision on one alert: why it is held (None: send it), and what the cooldown held before it."""

    held: str | None
    suppressed: int = 0


AlertSink = Callable[[Alert, str | None], Awaitable[None]]  # (alert, channel or None for the CLI)
Evidence = Callable[[Alert], Awaitable[Alert]]  # the alert with its clip added (cut before the sinks see it)
LateClip = Callable[[Alert], Awaitable[str | None]]  # the clip's path once cut after the post; None: it failed
