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
from bot.llm.budget import Payer, payer_for
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.health import PipelineHealth
from bot.monitoring.held import HeldBook
from bot.monitoring.news import MonitorEvent, News
from bot.monitoring.outlived import Notice, Outlived
from bot.monitoring.rule_book import RuleBook
from bot.monitoring.rules import ANY, Rule, RuleState, Sightings, evaluate
from bot.monitoring.search.describe import Tracks, describe
from bot.monitoring.timeline import Timeline
from bot.monitoring.verify import Check, Mode, Verifier, mode_of, moved
from bot.storage import Storage, open_storage

if TYPE_CHECKING:
    from bot.pipelines.clips import ClipRecorder
    from bot.pipelines.manager import PipelineManager
    from workspace.memory import MemoryStore

log = logging.getLogger(__name__)


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
        self.health = PipelineHealth(pipelines, stall_seconds, min_fps)  # each problem said once, on its way in
        self._clock = clock
        self._store = storage if storage is not None else open_storage(
            db_path or settings.workspace / ".state" / "monitor.json", settings.storage.backend)
        self.book = RuleBook(self._store)  # which rules run for each camera
        self.book.camera_owner = self.camera_owner
        self._lock = threading.RLock()  # results arrive on pipeline threads, health checks on the loop
        self._state: dict[tuple[str, str], RuleState] = {}
        self.news = News()  # what the next heartbeat looks at (tier 2)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: set[Future[Any]] = set()
        self.timeline = Timeline(memory, clock) if memory is not None else None  # the day's log, in numbers
        self._ended: set[str] = set()  # pipelines whose timeline was completed
        self.held = HeldBook()  # what the cooldown held since each rule's last alert
        self._seen: dict[str, set[str]] = {}  # classes each camera's results have shown (a rule must name one)
        self.sightings = Sightings()  # when each camera last showed each class: a `then` rule reads another camera's
        self.tracks = Tracks()  # where tracked objects went lately: an event's words say which way it moved
        # what people set on a camera whose pipeline ended is told so where they set it (watches, jobs add theirs)
        self.outlived = Outlived(router, settings.heartbeat.timezone, clock)
        self.outlived.add(self._outlived_rules)
        self.verifier: Verifier | None = None  # verified alerts: the model checks a rule's alert (set by the runtime)

    def camera_owner(self, camera: str) -> str | None:
        """The Slack user who runs `camera`'s pipeline (None: the operator's, or no pipeline)."""
        owner = getattr(self.pipelines, "owner", None)
        try:
            return owner(camera).user if owner is not None else None
        except LookupError:
            return None

    # wiring -------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Deliver alerts on this loop (default: the running one) and start listening to pipelines."""
        self._loop = loop or asyncio.get_running_loop()
        if self.pipelines is not None and hasattr(self.pipelines, "add_result_listener"):
            self.pipelines.add_result_listener(self.on_result)
            self.pipelines.add_result_listener(self.outlived.on_result)

    # rules --------------------------------------------------------------
    def add_rule(self, rule: Rule) -> Rule:
        """Add or replace a rule for a camera ('*' = all); a camera with own rules drops the guessed defaults."""
        return self.book.add(rule)

    def remove_rule(self, rule_id: str, camera: str = ANY) -> bool:
        return self.book.remove(rule_id, camera)

    def rules(self, camera: str | None = None) -> list[Rule]:
        """Configured rules (all, or those that apply to one camera including '*')."""
        return self.book.rules(camera)

    def effective_rules(self, camera: str) -> list[Rule]:
        """Rules that run for a camera: its configured ones and the guessed defaults they do not replace."""
        return self.book.effective(camera)

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
            self.health.result_at(handle.pipeline_id, now)
            self.tracks.saw(camera, result, now)
            self.book.guess(camera, result)
            for rule in self.book.effective(camera):
                state = self._state.setdefault((camera, rule.id), RuleState())
                hit = evaluate(rule, state, result, now, self.sightings)
                if hit is not None:
                    seen = describe(camera, result, (rule.class_name, rule.other_class), self.tracks, result.frame)
                    ev = MonitorEvent(camera, rule.id, hit.text, now, hit.counts, result.frame, handle.pipeline_id,
                                      channel=rule.owner.channel if rule.owner and rule.owner.member else None,
                                      seen=seen.text, box=seen.box)
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
                for rule, text in self.health.new_problems(h, now):
                    ev = MonitorEvent(h.name, rule, text, now, {}, self.health.latest_frame(h), h.pipeline_id)
                    admitted = self._admit(ev, None)
                    if admitted is not None:
                        events.append(admitted)
        for ev in events:
            await self.emit(ev)
        await self.outlived.check(handles)
        return events

    def _outlived_rules(self, h: PipelineHandle) -> list[Notice]:
        """The camera's own rules pause while no pipeline runs on it: said to whoever set them, where they did."""
        by: dict[tuple[str | None, str | None], list[str]] = {}
        for r in self.book.rules():
            if r.camera == h.name and r.enabled:
                member = r.owner is not None and r.owner.member
                by.setdefault((r.owner.channel if member and r.owner else None,
                               r.owner.user if member and r.owner else None), []).append(f"`{r.id}`")
        return [Notice(channel, None, user, f"rule{'s' * (len(ids) > 1)} {', '.join(ids)} paused until {h.name} "
                       "runs again") for (channel, user), ids in by.items()]

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
        out at once and its clip follows into it once cut (`clips.post_first`), or, off, the alert waits for it.
        A verified rule's alert (bot/monitoring/verify.py) is looked at by the model meanwhile and updated in place
        with what it saw; a route that holds unverified alerts posts it only once the model saw it."""
        alert = ev.to_alert()
        mode = self.verify_mode(ev.camera, ev.rule)
        look = asyncio.ensure_future(self.check(ev)) if mode != "off" else None
        if look is not None and mode == "hold":
            alert, look = replace(alert, check=await look), None
            if alert.check is not None and alert.check.seen is False:
                await self.router.drop(alert, f"not verified: {alert.check.what}")
                if self.timeline is not None:
                    self.timeline.note(ev.camera, f"ALERT {ev.rule}: {ev.text} (not posted: the model saw "
                                       f"{alert.check.what})")
                return
        told = asyncio.ensure_future(self._tell_check(alert, look)) if look is not None else None
        try:
            if self.clips is None or ev.mark is None or not ev.pipeline_id:
                await self.router.deliver(alert)
            elif self.clips.config.post_first:
                await self.router.deliver(alert, late=lambda a: self._clip_of(ev))
            else:
                await self.router.deliver(alert, attach=lambda a: self._with_clip(ev, a))
        finally:
            if told is not None:
                await told
        if self.timeline is not None:
            self.timeline.note(ev.camera, f"ALERT {ev.rule}: {ev.text}")

    # verified alerts --------------------------------------------------------
    def _rule_of(self, camera: str, rule_id: str) -> Rule | None:
        return next((r for r in self.book.effective(camera) if r.id == rule_id), None)

    def verify_mode(self, camera: str, rule_id: str) -> Mode:
        """Whether this rule's alerts on `camera` are checked: the rule's word, its route's, the default. Only a
        rule's alerts are (pipeline health, reports and watches have no rule to verify)."""
        rule = self._rule_of(camera, rule_id)
        if self.verifier is None or rule is None:
            return "off"
        return mode_of(rule.verify, self.router.verify_of(camera), self.verifier.default)

    def payer_of(self, camera: str, rule_id: str) -> Payer:
        """Who pays for a look at a rule's alert: the rule's owner (a member's share and the day's budget, as a
        confirm watch's look), for a guessed default the camera's pipeline's owner, else the operator."""
        rule = self._rule_of(camera, rule_id)
        owner = rule.owner if rule is not None else None
        if owner is not None and owner.member:
            return payer_for(owner.user, owner.channel)
        default = rule is not None and owner is None and rule not in self.book.rules()
        runs = self.camera_owner(camera) if default else None
        return payer_for(runs, None) if runs else Payer()

    def _frames(self, ev: MonitorEvent) -> list[bytes]:
        """The alert's frame, then (when things moved) a few of the seconds before it, from the clip ring."""
        if not ev.frame:
            return []
        before: list[bytes] = []
        if self.clips is not None and ev.mark is not None and ev.pipeline_id:
            before = [f.jpeg for f in self.clips.frames(ev.pipeline_id, ev.mark - 2.0, ev.mark) if f.jpeg != ev.frame]
        return [ev.frame, *moved(before)]

    async def check(self, ev: MonitorEvent) -> Check:
        """The model's look at the event's alert (never raises: a look that cannot happen says why)."""
        assert self.verifier is not None
        t0 = time.monotonic()
        frames = await asyncio.to_thread(self._frames, ev)
        return await self.verifier.check(ev.camera, ev.rule, ev.to_alert().text, frames,
                                         self.payer_of(ev.camera, ev.rule), started=t0)

    async def _tell_check(self, alert: Alert, look: asyncio.Future[Check]) -> None:
        try:
            check = await look
        except Exception:  # noqa: BLE001 - the alert stands as posted
            log.exception("check of %s/%s failed", alert.camera, alert.rule)
            return
        await self.router.checked(replace(alert, check=check))

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
