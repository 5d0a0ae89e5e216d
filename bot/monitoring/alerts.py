"""Alerts and their routing: per-camera channel routes, mutes, THE cooldown (one per camera+rule), quiet hours."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field

from bot.monitoring.alert import Alert, AlertSink, Evidence, LateClip, Verdict
from bot.monitoring.alert_frames import AlertFrames
from bot.monitoring.events_log import CHECKED, EventLog, event_type_of
from bot.monitoring.in_flight import InFlight
from bot.monitoring.lanes import Lanes
from bot.objects.owner import Owner
from bot.storage import Storage, open_storage, records

__all__ = ["DEFAULT_CAMERA", "Alert", "AlertRouter", "in_window"]  # Alert: its many importers name it here
log = logging.getLogger(__name__)

DEFAULT_CAMERA = "*"


class Route(BaseModel):
    """A stored alert route: a camera's alerts (`*`: every camera's) to a channel, and who set it."""

    model_config = ConfigDict(extra="ignore")

    camera: str = Field(min_length=1, max_length=80)
    channel: str = Field(min_length=1, max_length=100)
    owner: Owner | None = None
    verify: Literal["on", "hold", "off"] | None = None  # the model checks its alerts (None: monitoring.verify)


class Mute(BaseModel):
    """A stored mute: a camera's alerts held until a time."""

    model_config = ConfigDict(extra="ignore")

    camera: str = Field(min_length=1, max_length=80)
    until: float = Field(allow_inf_nan=False, ge=0, le=1e11)  # a time: one past the year 5000 is no mute


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
        storage: Storage | None = None,
        events: EventLog | None = None,
        frames: AlertFrames | None = None,
    ) -> None:
        self._store = storage if storage is not None else open_storage(db_path)
        self.events = events  # every alert, sent or held, is recorded here (get_events, MCP, API, webhooks)
        self.frames = frames  # the frame of every alert sent, by alert id (a webhook's frame_url, the API)
        self._routes = self._store.table("routes")
        self._mutes = self._store.table("mutes")
        # Read through their models once: a record of another shape is set aside (bot/storage/records.py), so the
        # reads on every alert below find only rows that fit.
        records.load(self._store, "routes", Route.model_validate)
        records.load(self._store, "mutes", Mute.model_validate)
        self.storage = self._store  # other alert state (false alarms) keeps its tables here too
        self.default_channel = default_channel
        self.cooldown_seconds = cooldown_seconds
        self.quiet_hours = quiet_hours
        self._tz = ZoneInfo(timezone)
        self._clock = clock
        self._last_sent: dict[tuple[str, str], float] = {}
        self._suppressed: dict[tuple[str, str], int] = {}
        self._cool_lock = threading.Lock()  # admit() runs on pipeline threads, dispatch() on the loop
        self._sinks: list[AlertSink] = []
        self._after_clip: list[AlertSink] = []  # sinks that take an alert once, with its clip (webhooks)
        self._clip_sinks: list[AlertSink] = []  # told when a clip that follows its alert is cut or failed
        self._check_sinks: list[AlertSink] = []  # told the model's look at an alert already delivered
        self.in_flight = InFlight()  # alerts let through and not yet delivered: their summaries wait for them
        self._observers: list[Callable[[Alert, str], None]] = []
        self.lanes = Lanes()  # one FIFO per channel: alerts for a channel leave in the order they happened

    # routes -------------------------------------------------------------
    def set_route(self, channel: str, camera: str | None = None, owner: Owner | None = None,
                  verify: Literal["on", "hold", "off"] | None = None) -> None:
        """Send `camera`'s alerts (None: every camera's) to `channel`; `owner`: who set it (None: the operator);
        `verify`: whether the model checks them (bot/monitoring/verify.py; None: the configured default)."""
        cam = camera or DEFAULT_CAMERA
        self._routes.upsert(Route(camera=cam, channel=channel, owner=owner, verify=verify).model_dump(), camera=cam)

    def verify_of(self, camera: str) -> Literal["on", "hold", "off"] | None:
        """The route's word on checking `camera`'s alerts: its own route's, else every camera's (None: unsaid)."""
        for cam in (camera, DEFAULT_CAMERA):
            row = self._routes.get(camera=cam)
            if row is not None:
                said = Route.model_validate(row).verify
                if said is not None:
                    return said
        return None

    def remove_route(self, camera: str | None = None) -> bool:
        return bool(self._routes.remove(camera=camera or DEFAULT_CAMERA))

    def routes(self) -> dict[str, str]:
        return {r["camera"]: r["channel"] for r in self._routes.all() if "camera" in r and "channel" in r}

    def route_checks(self) -> dict[str, str]:
        """Each route's own `verify` (on | hold | off), for the routes that set one (the others follow the rule's
        own verify, else monitoring.verify): what GET /api/routes shows beside the channels."""
        return {r["camera"]: r["verify"] for r in self._routes.all()
                if "camera" in r and r.get("verify") in ("on", "hold", "off")}

    def route_owner(self, camera: str | None) -> Owner | None:
        """Who set the route of `camera` (None: every camera's); None when there is none or the operator set it."""
        row = self._routes.get(camera=camera or DEFAULT_CAMERA)
        return Route.model_validate(row).owner if row else None

    def route_owners(self) -> list[str | None]:
        """The owner (a Slack user, None: the operator) of every route: what the caps count."""
        owners = (Route.model_validate(r).owner for r in self._routes.all())
        return [o.user if o is not None else None for o in owners]

    def channel_for(self, camera: str) -> str | None:
        """Camera-specific route, else the routed default, else the configured alert channel."""
        routes = self.routes()
        return routes.get(camera) or routes.get(DEFAULT_CAMERA) or self.default_channel

    # mutes --------------------------------------------------------------
    def mute(self, camera: str, seconds: float) -> float:
        until = self._clock() + seconds
        self._mutes.upsert({"camera": camera, "until": until}, camera=camera)
        return until

    def unmute(self, camera: str) -> None:
        self._mutes.remove(camera=camera)

    def muted_until(self, camera: str) -> float | None:
        now = self._clock()
        for cam in (camera, DEFAULT_CAMERA):
            row = self._mutes.get(camera=cam)
            until = row.get("until") if row else None
            if isinstance(until, (int, float)) and until > now:
                return float(until)
        return None

    # delivery -----------------------------------------------------------
    def add_sink(self, sink: AlertSink, after_clip: bool = False) -> None:
        """`sink(alert, channel)` for every alert sent; `after_clip`: only once its clip is cut (or failed)."""
        sinks = self._after_clip if after_clip else self._sinks
        if sink not in sinks:
            sinks.append(sink)

    def destinations(self, camera: str, channel: str | None = None) -> list[str]:
        """Where an alert of `camera` (to `channel`, else its route) is seen, in words ("Slack <#C1>", "the webhook
        at https://host:443"): what a REST or relayed watch's reply names as the place its answer goes. A sink says
        it with a `where(channel) -> str | None` of its own, or of the object whose method it is (None: not there)."""
        channel = channel or self.channel_for(camera)
        out = []
        for sink in [*self._sinks, *self._after_clip]:
            where = getattr(sink, "where", None) or getattr(getattr(sink, "__self__", None), "where", None)
            if callable(where) and (said := where(channel)):
                out.append(str(said))
        return list(dict.fromkeys(out))

    def add_clip_sink(self, sink: AlertSink) -> None:
        """`sink(alert, channel)` when the clip of an alert already delivered is cut (alert.clip_path set) or
        could not be (alert.clip_path None): the sink adds it to the alert, or says it failed."""
        if sink not in self._clip_sinks:
            self._clip_sinks.append(sink)

    def add_check_sink(self, sink: AlertSink) -> None:
        """`sink(alert, channel)` when the model has looked at an alert already delivered (alert.check set): the
        sink updates the alert in place with what it saw (verified alerts)."""
        if sink not in self._check_sinks:
            self._check_sinks.append(sink)

    async def checked(self, alert: Alert) -> None:
        """Tell the check sinks the model's look at `alert` (alert.check), once the alert itself is delivered."""
        if not await self.in_flight.wait((alert.alert_id,)):
            log.warning("check of alert %s given before the alert was delivered", alert.alert_id)
        await self._send(self._check_sinks, alert, alert.channel or self.channel_for(alert.camera))
        if self.events is not None and alert.check is not None:  # the webhook and the log hear the verdict too
            self.events.append({
                "event_type": CHECKED, "rule": CHECKED, "camera": alert.camera, "text": alert.check.line(),
                "summary": alert.check.line(), "about": [alert.alert_id], "check": alert.check.verdict(),
                "counts": {}, "time": self._clock(), "pipeline_id": alert.pipeline_id})

    async def drop(self, alert: Alert, reason: str) -> None:
        """An alert decide() let through that will not be delivered after all (a route that holds unverified alerts:
        the model did not see it): recorded as held, and nobody waits for its delivery. Like a muted one, it does not
        hold the rule's next alert back: the cooldown starts again from the last one sent."""
        with self._cool_lock:
            if self._last_sent.get((alert.camera, alert.rule)) == alert.time:
                del self._last_sent[(alert.camera, alert.rule)]
        self.record(alert, reason)
        await self.in_flight.delivered(alert.alert_id)

    def remove_sink(self, sink: AlertSink) -> None:
        for sinks in (self._sinks, self._after_clip, self._clip_sinks, self._check_sinks):
            if sink in sinks:
                sinks.remove(sink)

    def admit(self, camera: str, rule: str, now: float, cooldown: float | None = None) -> int | None:
        """THE cooldown, per camera+rule: None while cooling down (the event is counted), else how many were held.

        `cooldown` is the rule's own (e.g. `/vision rule cam line cooldown=60`); None uses the router's default.
        """
        key = (camera, rule)
        with self._cool_lock:
            last = self._last_sent.get(key)
            if last is not None and now - last < (self.cooldown_seconds if cooldown is None else cooldown):
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return None
            self._last_sent[key] = now
            return self._suppressed.pop(key, 0)

    def cooling(self, camera: str, rule: str, cooldown: float | None = None) -> float:
        """Seconds the cooldown still holds this camera's rule back (0: the next event goes out)."""
        with self._cool_lock:
            last = self._last_sent.get((camera, rule))
        wait = self.cooldown_seconds if cooldown is None else cooldown
        return 0.0 if last is None else max(0.0, last + wait - self._clock())

    def check(self, alert: Alert) -> str | None:
        """Why this alert would be held back by a mute or quiet hours, or None."""
        if self.muted_until(alert.camera):
            return "muted"
        if in_window(self.quiet_hours, datetime.fromtimestamp(self._clock(), self._tz)):
            return "quiet hours"
        return None

    def record(self, alert: Alert, held: str | None = None) -> None:
        """Put the alert in the event log (without its frame); `held` says why it was not sent. A held event is
        also shown to the observers (the webhook wants every tier-1 event). Any thread (the monitor's cooldown)."""
        if self.events is not None:
            ev = alert.as_dict(with_frame=self.events.pictures is not None)  # the frame becomes its picture
            ev.pop("cooldown_seconds", None)
            for key in ("seen", "box"):
                if not ev.get(key):
                    ev.pop(key, None)
            ev.update(event_type=event_type_of(alert.rule), has_frame=alert.frame is not None)
            if held:
                ev["held"] = held
            self.events.append(ev)
        if not held:
            return
        for observe in list(self._observers):
            try:
                observe(alert, held)
            except Exception:  # an observer never costs the event log or the alert
                log.exception("held-event observer failed")

    def observe_held(self, observer: Callable[[Alert, str], None]) -> None:
        """`observer(alert, reason)` for every event held back (muted, quiet hours, cooldown); it must not block."""
        if observer not in self._observers:
            self._observers.append(observer)

    def decide(self, alert: Alert, now: float | None = None) -> Verdict:
        """THE decision, once per alert, on any thread: held (muted, quiet hours, cooldown) or sent, and how many
        events the cooldown held since the last one sent. A muted or quiet alert does not start the cooldown."""
        reason = self.check(alert)
        if reason:
            return Verdict(reason)
        suppressed = self.admit(alert.camera, alert.rule, self._clock() if now is None else now, alert.cooldown_seconds)
        if suppressed is None:
            return Verdict("cooldown")
        self.in_flight.expect(alert.alert_id)
        return Verdict(None, suppressed)

    async def dispatch(self, alert: Alert, attach: Evidence | None = None) -> str | None:
        """Decide, then deliver: the alert to every sink unless muted / cooling down / quiet. The reason if held."""
        held = self.decide(alert).held
        if held:
            log.info("alert %s/%s held: %s", alert.camera, alert.rule, held)
            self.record(alert, held)
            return held
        await self.deliver(alert, attach)
        return None

    async def deliver(self, alert: Alert, attach: Evidence | None = None, late: LateClip | None = None) -> None:
        """Send an alert decide() let through to every sink, in the channel's order.

        The channel's lane is taken before the first await, so alerts for one channel reach the sinks in the order
        deliver() was called, whatever the waits after it (the frame stored on a thread, an upload under 429s).
        `attach` adds evidence (the clip) inside the lane, before the sinks; `late` cuts the clip after the sinks
        had the alert, outside the lane, and then tells the clip sinks. A summary (`about`) first waits for the
        alerts it is about, so it can land in them.
        """
        if alert.about and not await self.in_flight.wait(alert.about):
            log.warning("summary %s delivered before the alerts it is about", alert.alert_id)
        channel = alert.channel or self.channel_for(alert.camera)
        try:
            async with self.lanes.hold(channel or ""):
                if attach is not None:
                    alert = await attach(alert)
                self.record(alert)
                await self._keep_frame(alert)
                await self._send(self._sinks if late else self._sinks + self._after_clip, alert, channel)
        finally:
            await self.in_flight.delivered(alert.alert_id)
        if late is not None:
            try:
                clip = await late(alert)
            except Exception:  # noqa: BLE001 - the clip sinks say it failed
                log.exception("clip for %s/%s failed", alert.camera, alert.rule)
                clip = None
            await self._send(self._after_clip + self._clip_sinks, replace(alert, clip_path=clip), channel)

    async def _keep_frame(self, alert: Alert) -> None:
        """Stored before any sink runs: a link a sink sends resolves."""
        if alert.frame and self.frames is not None:
            try:
                await asyncio.to_thread(self.frames.put, alert.alert_id, alert.frame)
            except OSError as exc:  # a full disk costs the frame link, never the alert
                log.warning("alert frame not kept (%s): its webhook frame_url will answer 404", exc)

    async def _send(self, sinks: list[AlertSink], alert: Alert, channel: str | None) -> None:
        for sink in list(sinks):
            try:
                await sink(alert, channel)
            except Exception:  # one broken sink must not silence the others
                log.exception("alert sink failed")
