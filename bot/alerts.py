"""Alerts and their routing: per-camera channel routes (TinyDB), mutes, cooldowns, quiet hours."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tinydb import Query, TinyDB

log = logging.getLogger(__name__)

DEFAULT_CAMERA = "*"


@dataclass(frozen=True)
class Alert:
    """One alert: what happened, where, and the evidence."""

    camera: str
    rule: str
    text: str
    counts: dict[str, int] = field(default_factory=dict)
    time: float = field(default_factory=time.time)
    frame: bytes | None = None  # annotated JPEG
    pipeline_id: str | None = None
    summary: str | None = None  # tier-2 one-line summary

    def as_dict(self, with_frame: bool = True) -> dict[str, Any]:
        d = asdict(self)
        if not with_frame:
            d.pop("frame")
        return d


AlertSink = Callable[[Alert, str | None], Awaitable[None]]  # (alert, channel or None for the CLI)


def in_window(window: str | None, now: datetime) -> bool:
    """True if `now` falls in 'HH:MM-HH:MM' (may wrap midnight). None means never."""
    if not window:
        return False
    start_s, end_s = (p.strip() for p in window.split("-", 1))
    sh, sm = (int(x) for x in start_s.split(":"))
    eh, em = (int(x) for x in end_s.split(":"))
    cur, start, end = now.hour * 60 + now.minute, sh * 60 + sm, eh * 60 + em
    return start <= cur < end if start <= end else cur >= start or cur < end


class AlertRouter:
    """Decides whether an alert goes out and where; adapters register sinks that deliver it."""

    def __init__(
        self,
        db_path: Path,
        default_channel: str | None = None,
        cooldown_seconds: float = 300.0,
        quiet_hours: str | None = None,
        timezone: str = "UTC",
        clock: Callable[[], float] = time.time,
    ) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self._db = TinyDB(db_path)
        self._routes = self._db.table("routes")
        self._mutes = self._db.table("mutes")
        self.default_channel = default_channel
        self.cooldown_seconds = cooldown_seconds
        self.quiet_hours = quiet_hours
        self._tz = ZoneInfo(timezone)
        self._clock = clock
        self._last_sent: dict[tuple[str, str], float] = {}
        self._sinks: list[AlertSink] = []
        self._lock = asyncio.Lock()

    # routes -------------------------------------------------------------
    def set_route(self, channel: str, camera: str | None = None) -> None:
        cam = camera or DEFAULT_CAMERA
        self._routes.upsert({"camera": cam, "channel": channel}, Query().camera == cam)

    def remove_route(self, camera: str | None = None) -> bool:
        return bool(self._routes.remove(Query().camera == (camera or DEFAULT_CAMERA)))

    def routes(self) -> dict[str, str]:
        return {r["camera"]: r["channel"] for r in self._routes.all()}

    def channel_for(self, camera: str) -> str | None:
        """Camera-specific route, else the routed default, else the configured alert channel."""
        routes = self.routes()
        return routes.get(camera) or routes.get(DEFAULT_CAMERA) or self.default_channel

    # mutes --------------------------------------------------------------
    def mute(self, camera: str, seconds: float) -> float:
        until = self._clock() + seconds
        self._mutes.upsert({"camera": camera, "until": until}, Query().camera == camera)
        return until

    def unmute(self, camera: str) -> None:
        self._mutes.remove(Query().camera == camera)

    def muted_until(self, camera: str) -> float | None:
        now = self._clock()
        for cam in (camera, DEFAULT_CAMERA):
            row = self._mutes.get(Query().camera == cam)
            if row and row["until"] > now:
                return float(row["until"])
        return None

    # delivery -----------------------------------------------------------
    def add_sink(self, sink: AlertSink) -> None:
        if sink not in self._sinks:
            self._sinks.append(sink)

    def remove_sink(self, sink: AlertSink) -> None:
        if sink in self._sinks:
            self._sinks.remove(sink)

    def check(self, alert: Alert) -> str | None:
        """Why this alert would be held back, or None if it may go out now."""
        if self.muted_until(alert.camera):
            return "muted"
        last = self._last_sent.get((alert.camera, alert.rule))
        if last is not None and self._clock() - last < self.cooldown_seconds:
            return "cooldown"
        if in_window(self.quiet_hours, datetime.fromtimestamp(self._clock(), self._tz)):
            return "quiet hours"
        return None

    async def dispatch(self, alert: Alert) -> str | None:
        """Send the alert to every sink unless muted / cooling down / quiet. Returns the reason if held."""
        async with self._lock:
            reason = self.check(alert)
            if reason:
                log.info("alert %s/%s held: %s", alert.camera, alert.rule, reason)
                return reason
            self._last_sent[(alert.camera, alert.rule)] = self._clock()
        channel = self.channel_for(alert.camera)
        for sink in list(self._sinks):
            try:
                await sink(alert, channel)
            except Exception:  # one broken sink must not silence the others
                log.exception("alert sink failed")
        return None
