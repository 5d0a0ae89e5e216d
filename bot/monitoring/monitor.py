"""Tier 1 (no LLM): rule events and pipeline health from results, deduped and cooled down, sent as alerts."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.backends.base import InferenceResult, PipelineHandle
from bot.config import Settings
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.held import HeldBook
from bot.monitoring.news import MonitorEvent, News
from bot.monitoring.rules import ANY, Rule, RuleState, Sightings, default_rules, evaluate
from bot.monitoring.timeline import Timeline
from bot.pipelines.limits import cannot_count
from bot.pipelines.status import health_problems
from bot.storage import Storage, open_storage

if TYPE_CHECKING:
    from bot.pipelines.clips import ClipRecorder
    from bot.pipelines.manager import PipelineManager
    from workspace.memory import MemoryStore

log = logging.getLogger(__name__)
KEPT_DEFAULTS = ("line_crossed", "time_in_zone")  # what a pipeline was started for (line=, zone=): kept beside rules
GUESS_UNTIL_SURE = [Rule("class_appears")]  # the fallback guess: a later result may still show a line or a zone


def _slot(rule: Rule) -> tuple[str | None, ...]:
    """What a camera's own rule replaces of an every-camera one: the same kind on the same classes and camera."""
    return rule.kind, rule.class_name, rule.other_class, rule.after_camera


class Monitor:
    """Watches every pipeline result (from pipeline threads) and pipeline health (from scheduler ticks)."""

    def __init__(
        self,
        router: AlertRouter,
        pipelines: PipelineManager | None,
        settings: Settings,
        memory: MemoryStore | None = None,
        clock: Callable[[], float] = time.time,
        db_path: Path | None = None,
        stall_seconds: float = 30.0,
        min_fps: float = 0.5,
        storage: Storage | None = None,
        clips: ClipRecorder | None = None,
    ) -> None:
        self.router, self.pipelines, self.memory = router, pipelines, memory
        self.clips = clips  # the pipelines' recent frames: each rule alert gets the seconds around it
        self.stall_seconds, self.min_fps = stall_seconds, min_fps
        self._clock = clock
        self._store = storage if storage is not None else open_storage(
            db_path or settings.workspace / ".state" / "monitor.json", settings.storage.backend)
        self._table = self._store.table("rules")
        self._lock = threading.RLock()  # results arrive on pipeline threads, rule edits on the loop
        self._state: dict[tuple[str, str], RuleState] = {}
        self._defaults: dict[str, list[Rule]] = {}
        self._last_result: dict[str, float] = {}
        self._health: dict[str, set[str]] = {}
        self.news = News()  # what the next heartbeat looks at (tier 2)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: set[Future[Any]] = set()
        self._rules = [Rule.from_dict(r) for r in self._table.all()]  # cached: read on every frame
        self.timeline = Timeline(memory, clock) if memory is not None else None  # the day's log, in numbers
        self._ended: set[str] = set()  # pipelines whose timeline was completed
        self.held = HeldBook()  # what the cooldown held since each rule's last alert
        self._seen: dict[str, set[str]] = {}  # classes each camera's results have shown (a rule must name one)
        self.sightings = Sightings()  # when each camera last showed each class: a `then` rule reads another camera's

    # wiring -------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Deliver alerts on this loop (default: the running one) and start listening to pipelines."""
        self._loop = loop or asyncio.get_running_loop()
        if self.pipelines is not None and hasattr(self.pipelines, "add_result_listener"):
            self.pipelines.add_result_listener(self.on_result)

    # rules --------------------------------------------------------------
    def add_rule(self, rule: Rule) -> Rule:
        """Add or replace a rule for a camera ('*' = all); a camera with own rules drops the guessed defaults."""
        with self._lock:
            self._table.upsert({**rule.as_dict(), "id": rule.id}, camera=rule.camera, id=rule.id)
            self._rules = [r for r in self._rules if (r.camera, r.id) != (rule.camera, rule.id)] + [rule]
        return rule

    def remove_rule(self, rule_id: str, camera: str = ANY) -> bool:
        with self._lock:
            removed = bool(self._table.remove(camera=camera, id=rule_id))
            self._rules = [r for r in self._rules if (r.camera, r.id) != (camera, rule_id)]
            return removed

    def rules(self, camera: str | None = None) -> list[Rule]:
        """Configured rules (all, or those that apply to one camera including '*')."""
        with self._lock:
            out = list(self._rules)
        return out if camera is None else [r for r in out if r.camera in (camera, ANY)]

    def effective_rules(self, camera: str) -> list[Rule]:
        """Rules that run for a camera: its configured ones, plus the defaults guessed from its first result that
        they do not replace (a line's crossings and a zone's stays stay on beside a count rule; the `appears`
        guess only while the camera has no rule); a disabled rule of a kind turns that default off."""
        every = self.rules(camera)
        configured = [r for r in every if r.enabled]
        # a camera's own rule of a kind and class replaces the every-camera one (a false alarm tightens one camera)
        own = {_slot(r) for r in configured if r.camera == camera}
        configured = [r for r in configured if r.camera == camera or _slot(r) not in own]
        defaults = list(self._defaults.get(camera, []))
        if not every:
            return defaults
        ruled = {r.kind for r in every}
        return configured + [d for d in defaults if d.kind in KEPT_DEFAULTS and d.kind not in ruled]

    def seen_classes(self, camera: str) -> set[str]:
        """The classes this camera's results have shown in this process."""
        with self._lock:
            return set(self._seen.get(camera, ()))

    # tier 1 on results ----------------------------------------------------
    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        """Result listener (pipeline thread): evaluate the camera's rules and emit what fired."""
        now = self._clock()
        camera = handle.name
        fired: list[MonitorEvent] = []
        with self._lock:
            self._last_result[handle.pipeline_id] = now
            if camera not in self._defaults or self._defaults[camera] == GUESS_UNTIL_SURE:
                # an empty first frame of a zone pipeline looks like a plain detector: guess again until it shows
                self._defaults[camera] = default_rules(result)
            for rule in self.effective_rules(camera):
                state = self._state.setdefault((camera, rule.id), RuleState())
                hit = evaluate(rule, state, result, now, self.sightings)
                if hit is not None:
                    ev = MonitorEvent(camera, rule.id, hit.text, now, hit.counts, result.frame, handle.pipeline_id)
                    admitted = self._admit(ev, rule.cooldown_seconds)
                    if admitted is not None:
                        mark = self.clips.mark(handle.pipeline_id, result.frame) if self.clips else None
                        fired.append(replace(admitted, mark=mark))
            self._seen.setdefault(camera, set()).update(c for c, n in result.counts().items() if n)
            self.sightings.saw(camera, result, now)
        if self.timeline is not None:
            self.timeline.observe(camera, result)
        for ev in fired:
            self._emit_threadsafe(ev)

    @property
    def cooldown_seconds(self) -> float:
        """The default cooldown of rules without their own: the router's (there is one cooldown)."""
        return self.router.cooldown_seconds

    def _admit(self, ev: MonitorEvent, cooldown: float | None) -> MonitorEvent | None:  # holding self._lock
        """The router's one decision, here on the pipeline thread: a held event is only recorded (within the
        cooldown it is counted, then mentioned by the next one sent); one let through is delivered by emit()."""
        alert = replace(ev.to_alert(), cooldown_seconds=cooldown)
        verdict = self.router.decide(alert, now=ev.time)
        if verdict.held == "cooldown":
            self.router.record(alert, "cooldown")  # still counted in the event log (crossings add up)
            self.held.held(ev)  # ... and said by the next alert, or when the pipeline ends
            return None
        ev = replace(ev, suppressed=verdict.suppressed, held="" if verdict.held else self.held.sent(ev))
        self.news.add(ev)  # muted or quiet, it still happened: the heartbeat may mention it
        if verdict.held:
            self.router.record(alert, verdict.held)
            if self.timeline is not None:
                self.timeline.note(ev.camera, f"ALERT {ev.rule}: {ev.text} (not posted: {verdict.held})")
            return None
        return ev

    # tier 1 health ----------------------------------------------------------
    async def check_health(self) -> list[MonitorEvent]:
        """Pipeline health tick: errored, source dropped, stalled (no frames), low fps. Returns new events."""
        handles = await self.pipelines.list() if self.pipelines is not None else []
        now = self._clock()
        events: list[MonitorEvent] = []
        with self._lock:
            for h in handles:
                events += self._finish_if_ended(h, now)
                for rule, text in self._health_problems(h, now):
                    ev = MonitorEvent(h.name, rule, text, now, {}, self._latest_frame(h), h.pipeline_id)
                    admitted = self._admit(ev, None)
                    if admitted is not None:
                        events.append(admitted)
        for ev in events:
            await self.emit(ev)
        return events

    def _finish_if_ended(self, h: PipelineHandle, now: float) -> list[MonitorEvent]:  # holding self._lock
        """A pipeline that stopped, finished or failed gets what its timeline still held written, once, and the
        crossings its cooldown held summarised in one alert (the next alert that would have said them never comes)."""
        if h.status not in ("stopped", "finished", "error"):
            self._ended.discard(h.pipeline_id)
            return []
        if h.pipeline_id in self._ended:
            return []
        self._ended.add(h.pipeline_id)
        if self.timeline is not None:
            self.timeline.finish(h.name)
        summaries = []
        for rule, held in self.held.ended(h.name, h.pipeline_id):
            totals = f"; totals in {held.latest.get('count_in', 0)} / out {held.latest.get('count_out', 0)}"
            ev = MonitorEvent(h.name, rule, f"pipeline {h.status}, {held.text()} (held by the cooldown){totals}",
                              now, dict(held.latest), held.frame, h.pipeline_id)
            reason = self.router.check(ev.to_alert())  # past the cooldown (it is what the cooldown held); not a mute
            if reason:
                self.router.record(ev.to_alert(), reason)
            else:
                summaries.append(ev)
        return summaries

    def _health_problems(self, h: PipelineHandle, now: float) -> list[tuple[str, str]]:
        last = self._last_result.get(h.pipeline_id, 0.0)
        current = health_problems(h, now, last, self.stall_seconds, self.min_fps)
        if h.status == "running" and (note := cannot_count(getattr(self._latest(h), "values", None))):
            current["cannot_count"] = f"{h.name}: {note}."  # said once, after the first frames measured the camera
        before = self._health.get(h.pipeline_id, set())
        self._health[h.pipeline_id] = set(current)
        return [(rule, text) for rule, text in current.items() if rule not in before]  # only on the way in

    def _latest(self, h: PipelineHandle) -> Any:
        latest = getattr(self.pipelines, "latest", None)
        try:
            return latest(h.pipeline_id) if latest else None
        except Exception:  # noqa: BLE001 - a frame or a limit is a nicety for a health alert
            return None

    def _latest_frame(self, h: PipelineHandle) -> bytes | None:
        return getattr(self._latest(h), "frame", None)

    # output -------------------------------------------------------------
    def _emit_threadsafe(self, ev: MonitorEvent) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            log.warning("monitor event %s/%s not delivered: monitor not started", ev.camera, ev.rule)
            return
        fut = asyncio.run_coroutine_threadsafe(self.emit(ev), loop)
        with self._lock:
            self._inflight.add(fut)
        fut.add_done_callback(self._inflight.discard)

    async def emit(self, ev: MonitorEvent) -> None:
        """Deliver an event _admit() let through and log it in today's observations. With clips on, the alert goes
        out at once and its clip follows into it once cut (`clips.post_first`), or, off, the alert waits for it."""
        alert = ev.to_alert()
        if self.clips is None or ev.mark is None or not ev.pipeline_id:
            await self.router.deliver(alert)
        elif self.clips.config.post_first:
            await self.router.deliver(alert, late=lambda a: self._clip_of(ev))
        else:
            await self.router.deliver(alert, attach=lambda a: self._with_clip(ev, a))
        if self.timeline is not None:
            self.timeline.note(ev.camera, f"ALERT {ev.rule}: {ev.text}")

    async def _clip_of(self, ev: MonitorEvent) -> str | None:
        """The event's clip, cut without blocking anyone (no pipeline, no later alert waits for it); None: too few
        frames were kept to cut one."""
        if self.clips is None or ev.mark is None or not ev.pipeline_id:
            return None
        clip = await self.clips.record(ev.pipeline_id, ev.mark, ev.camera, ev.rule)
        return str(clip.path) if clip else None

    async def _with_clip(self, ev: MonitorEvent, alert: Alert) -> Alert:
        """The alert with its clip, cut inside the channel's lane (`clips.post_first: false`, the old ordering)."""
        try:
            clip = await self._clip_of(ev)
        except Exception:  # noqa: BLE001 - the alert goes out without its clip rather than not at all
            log.exception("clip for %s/%s failed", ev.camera, ev.rule)
            return alert
        return replace(alert, clip_path=clip) if clip else alert

    async def flush(self) -> None:
        """Wait until alerts fired from pipeline threads have been delivered."""
        while True:
            with self._lock:
                pending = [f for f in self._inflight if not f.done()]
            if not pending:
                return
            await asyncio.gather(*(asyncio.wrap_future(f) for f in pending), return_exceptions=True)
