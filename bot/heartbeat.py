"""Tier 2: ask the model only when tier 1 has news or a checklist item is due; a daily cap; never post OK."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bot.agent import is_heartbeat_ok
from bot.alerts import DEFAULT_CAMERA, Alert, in_window
from bot.checklist import ChecklistItem, scheduled_items
from bot.events import EventType
from bot.monitor import MonitorEvent

log = logging.getLogger(__name__)

MAX_FRAMES = 4


class Heartbeat:
    """One `run()` per scheduler tick. Outcomes: off-hours, idle, no-llm, capped, ok, alert, error."""

    def __init__(
        self,
        agent: Any,
        monitor: Any,
        router: Any,
        settings: Any,
        workspace: Any = None,
        pipelines: Any = None,
        memory: Any = None,
        clock: Callable[[], float] = time.time,
        state_path: Path | None = None,
        max_wait_seconds: float = 300.0,
    ) -> None:
        self.agent, self.monitor, self.router, self.settings = agent, monitor, router, settings
        self.workspace, self.pipelines, self.memory = workspace, pipelines, memory
        self._clock = clock
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
        try:
            return json.loads(self._state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _save_state(self) -> None:
        self._state_path.parent.mkdir(parents=True, exist_ok=True)
        self._state_path.write_text(json.dumps(self._state), encoding="utf-8")

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
    async def run(self) -> str:
        """One heartbeat: tier 2 only if there is something to look at, within the cap and active hours."""
        try:
            self.last_outcome = await self._run_once()
        finally:
            self.last_run = self._clock()
        return self.last_outcome

    async def _run_once(self) -> str:
        async with self._run_lock:
            now = self.now()
            if self.settings.heartbeat.active_hours and not in_window(self.settings.heartbeat.active_hours, now):
                return "off-hours"  # news stays queued for the first heartbeat in active hours
            pending = self.monitor.pending() if self.monitor is not None else []
            due = self.due_items(now)
            if not pending and not due:
                return "idle"
            if self.agent is None or not getattr(getattr(self.agent, "llm", None), "available", True):
                if self.monitor is not None:
                    self.monitor.take_new()  # no model to ask; their tier-1 alerts already went out
                return "no-llm"
            if not self._reserve_call(now):
                await self._cap_notice(now)
                return "capped"
            await self._wait_for_chat()
            events = self.monitor.take_new() if self.monitor is not None else []
            try:
                reply, frame = await self._ask(self.compose(now, events, due), self._frames(events, bool(due)))
            except Exception:
                log.exception("heartbeat failed; its events go to the next one")
                if self.monitor is not None:
                    self.monitor.requeue(events)
                return "error"
            self._mark_done(due)
            if not reply:
                return "ok"
            await self._alert(reply, events, frame)
            return "alert"

    async def _wait_for_chat(self) -> None:
        for prefix in self.chat_prefixes:
            if self.agent.busy(prefix):
                log.info("heartbeat waits for the chat turn running in %s*", prefix)
                try:
                    await asyncio.wait_for(self.agent.wait_idle(prefix), self.max_wait_seconds)
                except TimeoutError:
                    log.warning("chat in %s* still busy after %ss; heartbeat goes ahead", prefix, self.max_wait_seconds)

    async def _ask(self, text: str, frames: list[bytes]) -> tuple[str, bytes | None]:
        """The model's non-OK reply ('' for any HEARTBEAT_OK variant) and a frame it produced, if any."""
        parts: list[str] = []
        frame: bytes | None = frames[0] if frames else None
        async for ev in self.agent.process_heartbeat(text, frames=frames):
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

    async def _alert(self, reply: str, events: list[MonitorEvent], frame: bytes | None) -> None:
        cams = {e.camera for e in events}
        camera = cams.pop() if len(cams) == 1 else DEFAULT_CAMERA
        summary = next(line.strip(" *_#") for line in reply.splitlines() if line.strip(" *_#"))
        counts: dict[str, int] = {}
        for e in events:
            counts.update(e.counts)
        alert = Alert(camera, "heartbeat", reply, counts, self._clock(), frame, summary=summary[:200])
        reason = await self.router.dispatch(alert)
        if self.memory is not None:
            note = f"HEARTBEAT ALERT: {summary}" + (f" (not posted: {reason})" if reason else "")
            self.memory.store(note, "observation", camera_id=None if camera == DEFAULT_CAMERA else camera)

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
        await self.router.dispatch(Alert(DEFAULT_CAMERA, "heartbeat_cap", text, time=self._clock(), summary=text))

    # what the model sees --------------------------------------------------------
    def compose(self, now: datetime, events: list[MonitorEvent], due: list[ChecklistItem]) -> str:
        """The heartbeat's user message: new tier-1 events, pipelines, due checklist items."""
        lines = [f"Heartbeat at {now:%Y-%m-%d %H:%M} ({self._tz.key})."]
        if events:
            lines.append("\nNew since the last heartbeat (tier-1 events, already alerted where not muted):")
            for e in events:
                when = datetime.fromtimestamp(e.time, self._tz)
                counts = ", ".join(f"{k}={v}" for k, v in e.counts.items())
                lines.append(f"- {when:%H:%M:%S} {e.camera} [{e.rule}] {e.text}" + (f" ({counts})" if counts else ""))
        else:
            lines.append("\nNo new tier-1 events since the last heartbeat.")
        lines.append("\nPipelines:")
        lines += self._pipeline_lines() or ["- none running"]
        if due:
            lines.append("\nChecklist items due now:")
            lines += [f"- {i.text}" for i in due]
        lines.append(
            "\nReply HEARTBEAT_OK if nothing needs a person's attention. Otherwise start with one line that "
            "says what happened and where, then details."
        )
        return "\n".join(lines)

    def _pipeline_lines(self) -> list[str]:
        snap = getattr(self.pipelines, "snapshot", None)
        out = []
        for h in snap() if snap else []:
            fps = f", {h.fps:.1f} fps" if h.fps else ""
            latest = self._latest(h.pipeline_id)
            seen = ", ".join(f"{k}×{v}" for k, v in latest.counts().items()) if latest is not None else ""
            out.append(
                f"- {h.name} ({h.pipeline_id}): {h.status}{fps}, {h.frames} frames" + (f"; now: {seen}" if seen else "")
            )
        return out

    def _latest(self, pid: str) -> Any:
        try:
            return self.pipelines.latest(pid)
        except Exception:  # noqa: BLE001 - a stopped pipeline has no latest result
            return None

    def _frames(self, events: list[MonitorEvent], checklist_due: bool = False) -> list[bytes]:
        """A frame per camera with news (its event's evidence); for a due checklist item, the running cameras' latest.

        At most MAX_FRAMES: each image costs the model ~1.5k tokens.
        """
        frames: dict[str, bytes] = {}
        for e in sorted(events, key=lambda e: -e.time):
            if e.camera not in frames:
                latest = self._latest(e.pipeline_id) if e.pipeline_id and self.pipelines is not None else None
                frame = e.frame or getattr(latest, "frame", None)
                if frame:
                    frames[e.camera] = frame
        snap = getattr(self.pipelines, "snapshot", None)
        for h in snap() if checklist_due and snap else []:
            frame = getattr(self._latest(h.pipeline_id), "frame", None) if h.status == "running" else None
            if frame and h.name not in frames:
                frames[h.name] = frame
        return list(frames.values())[:MAX_FRAMES]
