"""Tier 2: ask the model only when tier 1 has news or a checklist item is due; a daily cap; never post OK."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bot.agent.turn_events import is_heartbeat_ok
from bot.events import EventType
from bot.media.cameras import cameras
from bot.monitoring.alerts import DEFAULT_CAMERA, Alert, in_window
from bot.monitoring.news import MonitorEvent
from bot.rights import UNATTENDED, Requester
from bot.scheduling.heartbeat.checklist import ChecklistItem, scheduled_items
from bot.scheduling.heartbeat.prompt import compose, frames
from bot.scheduling.inputs import SchedulerInputs
from bot.services import need
from workspace.atomic import read_state, write_atomic
from workspace.memory import SITE

log = logging.getLogger(__name__)


def _state_fits(state: dict[str, Any]) -> bool:
    """The heartbeat's own shape (a file of another one is kept aside like a damaged one, and it starts afresh)."""
    calls, done = state.get("calls", 0), state.get("done", {})
    return (isinstance(state.get("day", ""), str) and isinstance(calls, int) and not isinstance(calls, bool)
            and isinstance(done, dict) and all(isinstance(v, (int, float)) for v in done.values()))


class Heartbeat:
    """One `run()` per scheduler tick. Outcomes: off-hours, idle, no-llm, capped, ok, alert, error."""

    def __init__(self, inputs: SchedulerInputs, state_path: Path | None = None, max_wait_seconds: float = 300.0) -> None:
        self.agent, self.monitor, self.router = inputs.agent, inputs.monitor, inputs.router
        self.settings = settings = inputs.settings
        self.workspace, self.pipelines, self.memory = inputs.workspace, inputs.pipelines, inputs.memory
        self._clock = inputs.clock
        self._tz = ZoneInfo(settings.heartbeat.timezone)
        self.cap = settings.heartbeat.daily_llm_cap
        self.max_wait_seconds = max_wait_seconds
        # sessions whose running turn a heartbeat waits for; the Slack adapter can narrow 'slack:' to
        # 'slack:TEAM:ALERT_CHANNEL:' once it knows the team id
        self.chat_prefixes: list[str] = ["cli:"] + (["slack:"] if settings.slack.alert_channel else [])
        self._state_path = state_path or Path(settings.workspace) / ".state" / "heartbeat.json"
        self._state = self._load_state()
        self._run_lock = asyncio.Lock()
        self.last_run: float | None = None  # when the last heartbeat finished (any outcome), for /healthz
        self.last_outcome: str | None = None

    # state (calls per day, cap notice, checklist) ---------------------------------
    def _load_state(self) -> dict[str, Any]:
        # A damaged file is kept aside with one log line and its last good copy used: the day's call count survives.
        return read_state(self._state_path, dict, log, fits=_state_fits)[0] or {}

    def _save_state(self) -> None:
        write_atomic(self._state_path, json.dumps(self._state), keep_copy=True)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), self._tz)

    @property
    def calls_today(self) -> int:
        return int(self._state.get("calls", 0)) if self._state.get("day") == f"{self.now():%Y-%m-%d}" else 0

    def _reserve_call(self, now: datetime) -> bool:
        day = f"{now:%Y-%m-%d}"
        if self._state.get("day") != day:
            self._state.update(day=day, calls=0, cap_noticed=False)
        if self._state["calls"] >= self.cap:
            return False
        self._state["calls"] += 1
        self._save_state()
        return True

    def due_items(self, now: datetime | None = None) -> list[ChecklistItem]:
        now = now or self.now()
        text = self.workspace.heartbeat_checklist() if self.workspace is not None else ""
        done = self._state.get("done", {})
        return [i for i in scheduled_items(text or "") if i.due(now, done.get(i.key))]

    # the tick -----------------------------------------------------------------
    async def run(self, target: tuple[str | None, str | None] = (None, None), who: Requester = UNATTENDED) -> str:
        """One heartbeat: tier 2 only if there is something to look at, within the cap and active hours.

        `target` (a scheduled job's `to=`): its alert goes there instead of into the alerts it is about. `who`: a
        member's scheduled heartbeat is billed to them (`Requester.unattended_for`)."""
        try:
            self.last_outcome = await self._run_once(target, who)
        finally:
            self.last_run = self._clock()
        return self.last_outcome

    async def _run_once(self, target: tuple[str | None, str | None], who: Requester) -> str:
        async with self._run_lock:
            now = self.now()
            if self.settings.heartbeat.active_hours and not in_window(self.settings.heartbeat.active_hours, now):
                return "off-hours"  # news stays queued for the first heartbeat in active hours
            pending = self.monitor.news.pending() if self.monitor is not None else []
            due = self.due_items(now)
            if not pending and not due:
                return "idle"
            if self.agent is None or not self.agent.llm_available:
                if self.monitor is not None:
                    self.monitor.news.take()  # no model to ask; their tier-1 alerts already went out
                return "no-llm"
            if not self._reserve_call(now):
                await self._cap_notice(now)
                return "capped"
            await self._wait_for_chat()
            events = self.monitor.news.take() if self.monitor is not None else []
            try:
                message = compose(now, self._tz, events, due, self.pipelines,
                                  cameras(self.workspace, self.settings))
                reply, frame = await self._ask(message, frames(events, self.pipelines, bool(due)), who)
            except Exception:
                log.exception("heartbeat failed; its events go to the next one")
                if self.monitor is not None:
                    self.monitor.news.requeue(events)
                return "error"
            self._mark_done(due)
            if not reply:
                return "ok"
            await self._alert(reply, events, frame, target)
            return "alert"

    async def _wait_for_chat(self) -> None:
        agent = need(self.agent, "agent")
        for prefix in self.chat_prefixes:
            if agent.busy(prefix):
                log.info("heartbeat waits for the chat turn running in %s*", prefix)
                try:
                    await asyncio.wait_for(agent.wait_idle(prefix), self.max_wait_seconds)
                except TimeoutError:
                    log.warning("chat in %s* still busy after %ss; heartbeat goes ahead", prefix, self.max_wait_seconds)

    async def _ask(self, text: str, frames: list[bytes], who: Requester = UNATTENDED) -> tuple[str, bytes | None]:
        """The model's non-OK reply ('' for any HEARTBEAT_OK variant) and a frame it produced, if any."""
        parts: list[str] = []
        frame: bytes | None = frames[0] if frames else None
        async for ev in need(self.agent, "agent").process_heartbeat(text, frames=frames, who=who):
            if ev.type in (EventType.RESPONSE, EventType.ASK_USER):
                parts.append(ev.data.get("text", ""))
            elif ev.type is EventType.FRAME and ev.data.get("image"):
                frame = ev.data["image"]
            elif ev.type is EventType.ERROR:
                raise RuntimeError(ev.data.get("text", "heartbeat turn failed"))
        reply = "\n".join(p for p in parts if p).strip()
        return ("" if not reply or is_heartbeat_ok(reply) else reply), frame

    def _mark_done(self, items: list[ChecklistItem]) -> None:
        if items:
            done = self._state.setdefault("done", {})
            done.update({i.key: self._clock() for i in items})
            self._save_state()

    async def _alert(self, reply: str, events: list[MonitorEvent], frame: bytes | None,
                     target: tuple[str | None, str | None]) -> None:
        cams = {e.camera for e in events}
        camera = cams.pop() if len(cams) == 1 else DEFAULT_CAMERA
        summary = next(line.strip(" *_#") for line in reply.splitlines() if line.strip(" *_#"))
        counts: dict[str, int] = {}
        for e in events:
            counts.update(e.counts)
        # `about`: a sink may put the summary into those alerts; a job's own target (`to=`) wins over that
        alert = Alert(camera, "heartbeat", reply, counts, self._clock(), frame, summary=summary[:200],
                      about=tuple(e.alert_id for e in events), channel=target[0], thread_ts=target[1])
        reason = await need(self.router, "alert router").dispatch(alert)
        if self.memory is not None:
            note = f"HEARTBEAT ALERT: {summary}" + (f" (not posted: {reason})" if reason else "")
            # What the cameras showed, posted to the alerts channel anyway: the site's note, readable by everyone.
            self.memory.store(note, "observation", camera_id=None if camera == DEFAULT_CAMERA else camera,
                              audience=SITE)

    async def _cap_notice(self, now: datetime) -> None:
        if self._state.get("cap_noticed"):
            return
        self._state["cap_noticed"] = True
        self._save_state()
        text = (
            f"Heartbeat checks are paused until tomorrow: today's cap of {self.cap} model calls is used up. "
            "Rule alerts keep coming. Raise heartbeat.daily_llm_cap in config.yaml to allow more."
        )
        log.warning("%s", text)
        await need(self.router, "alert router").dispatch(Alert(DEFAULT_CAMERA, "heartbeat_cap", text, time=self._clock(), summary=text))
