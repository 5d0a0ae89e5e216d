"""Tier 1 (no LLM): rule events and pipeline health from results, deduped and cooled down, sent as alerts."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tinydb import Query, TinyDB

from bot.alerts import Alert, AlertRouter
from bot.backends.base import InferenceResult, PipelineHandle
from bot.config import Settings
from bot.monitor_rules import ANY, Rule, RuleState, default_rules, evaluate, health_problems

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorEvent:
    """Something tier 1 noticed; becomes an Alert and waits for the next heartbeat."""

    camera: str
    rule: str
    text: str
    time: float
    counts: dict[str, int] = field(default_factory=dict)
    frame: bytes | None = None
    pipeline_id: str | None = None
    suppressed: int = 0  # same camera+rule events held back by the cooldown before this one

    def to_alert(self) -> Alert:
        more = f" (+{self.suppressed} more within the cooldown)" if self.suppressed else ""
        return Alert(
            self.camera,
            self.rule,
            f"{self.camera}: {self.text}{more}",
            dict(self.counts),
            self.time,
            self.frame,
            self.pipeline_id,
        )


class Monitor:
    """Watches every pipeline result (from pipeline threads) and pipeline health (from scheduler ticks)."""

    def __init__(
        self,
        router: AlertRouter,
        pipelines: Any,
        settings: Settings,
        memory: Any = None,
        clock: Callable[[], float] = time.time,
        db_path: Path | None = None,
        stall_seconds: float = 30.0,
        min_fps: float = 0.5,
    ) -> None:
        self.router, self.pipelines, self.memory = router, pipelines, memory
        self.cooldown_seconds = settings.monitoring.alert_cooldown_seconds
        self.stall_seconds, self.min_fps = stall_seconds, min_fps
        self._clock = clock
        db_path = db_path or settings.workspace / ".state" / "monitor.json"
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self._db = TinyDB(db_path)
        self._lock = threading.RLock()  # results arrive on pipeline threads, rule edits on the loop
        self._state: dict[tuple[str, str], RuleState] = {}
        self._defaults: dict[str, list[Rule]] = {}
        self._last_fired: dict[tuple[str, str], float] = {}
        self._suppressed: dict[tuple[str, str], int] = {}
        self._last_result: dict[str, float] = {}
        self._health: dict[str, set[str]] = {}
        self._new: deque[MonitorEvent] = deque(maxlen=200)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: set[Future[Any]] = set()
        self._rules = [Rule.from_dict(r) for r in self._db.table("rules").all()]  # cached: read on every frame

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
            q = Query()
            self._db.table("rules").upsert(
                {**rule.as_dict(), "id": rule.id}, (q.camera == rule.camera) & (q.id == rule.id)
            )
            self._rules = [r for r in self._rules if (r.camera, r.id) != (rule.camera, rule.id)] + [rule]
        return rule

    def remove_rule(self, rule_id: str, camera: str = ANY) -> bool:
        with self._lock:
            q = Query()
            removed = bool(self._db.table("rules").remove((q.camera == camera) & (q.id == rule_id)))
            self._rules = [r for r in self._rules if (r.camera, r.id) != (camera, rule_id)]
            return removed

    def rules(self, camera: str | None = None) -> list[Rule]:
        """Configured rules (all, or those that apply to one camera including '*')."""
        with self._lock:
            out = list(self._rules)
        return out if camera is None else [r for r in out if r.camera in (camera, ANY)]

    def effective_rules(self, camera: str) -> list[Rule]:
        """Rules that run for a camera: its configured ones, else defaults guessed from its first result."""
        configured = [r for r in self.rules(camera) if r.enabled]
        return configured or list(self._defaults.get(camera, []))

    # tier 1 on results ----------------------------------------------------
    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        """Result listener (pipeline thread): evaluate the camera's rules and emit what fired."""
        now = self._clock()
        camera = handle.name
        fired: list[MonitorEvent] = []
        with self._lock:
            self._last_result[handle.pipeline_id] = now
            if camera not in self._defaults:
                self._defaults[camera] = default_rules(result)
            for rule in self.effective_rules(camera):
                state = self._state.setdefault((camera, rule.id), RuleState())
                hit = evaluate(rule, state, result, now)
                if hit is not None:
                    ev = MonitorEvent(camera, rule.id, hit.text, now, hit.counts, result.frame, handle.pipeline_id)
                    admitted = self._admit(ev, rule.cooldown_seconds)
                    if admitted is not None:
                        fired.append(admitted)
        for ev in fired:
            self._emit_threadsafe(ev)

    def _admit(self, ev: MonitorEvent, cooldown: float | None) -> MonitorEvent | None:  # holding self._lock
        """Per camera+rule cooldown: within it the event is only counted, then mentioned by the next one."""
        key = (ev.camera, ev.rule)
        last = self._last_fired.get(key)
        if last is not None and ev.time - last < (self.cooldown_seconds if cooldown is None else cooldown):
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._last_fired[key] = ev.time
        ev = replace(ev, suppressed=self._suppressed.pop(key, 0))
        self._new.append(ev)
        return ev

    # tier 1 health ----------------------------------------------------------
    async def check_health(self) -> list[MonitorEvent]:
        """Pipeline health tick: errored, source dropped, stalled (no frames), low fps. Returns new events."""
        handles = self.pipelines.list() if self.pipelines is not None else []
        if inspect.isawaitable(handles):
            handles = await handles
        now = self._clock()
        events: list[MonitorEvent] = []
        with self._lock:
            for h in handles:
                for rule, text in self._health_problems(h, now):
                    ev = MonitorEvent(h.name, rule, text, now, {}, self._latest_frame(h), h.pipeline_id)
                    admitted = self._admit(ev, None)
                    if admitted is not None:
                        events.append(admitted)
        for ev in events:
            await self.emit(ev)
        return events

    def _health_problems(self, h: PipelineHandle, now: float) -> list[tuple[str, str]]:
        last = self._last_result.get(h.pipeline_id, 0.0)
        current = health_problems(h, now, last, self.stall_seconds, self.min_fps)
        before = self._health.get(h.pipeline_id, set())
        self._health[h.pipeline_id] = set(current)
        return [(rule, text) for rule, text in current.items() if rule not in before]  # only on the way in

    def _latest_frame(self, h: PipelineHandle) -> bytes | None:
        latest = getattr(self.pipelines, "latest", None)
        try:
            res = latest(h.pipeline_id) if latest else None
        except Exception:  # noqa: BLE001 - a frame is a nicety for a health alert
            return None
        return getattr(res, "frame", None)

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

    async def emit(self, ev: MonitorEvent) -> str | None:
        """Route the alert (mute, cooldown, quiet hours apply) and log it in today's observations."""
        alert = ev.to_alert()
        reason = await self.router.dispatch(alert)
        if self.memory is not None:
            note = f"ALERT {ev.rule}: {ev.text}" + (f" (not posted: {reason})" if reason else "")
            try:
                self.memory.store(note, "observation", camera_id=ev.camera)
            except OSError:
                log.exception("could not write the observation log")
        return reason

    async def flush(self) -> None:
        """Wait until alerts fired from pipeline threads have been delivered."""
        while True:
            with self._lock:
                pending = [f for f in self._inflight if not f.done()]
            if not pending:
                return
            await asyncio.gather(*(asyncio.wrap_future(f) for f in pending), return_exceptions=True)

    def pending(self) -> list[MonitorEvent]:
        """Events since the last heartbeat took them (without taking them)."""
        with self._lock:
            return list(self._new)

    def take_new(self) -> list[MonitorEvent]:
        """Events since the last heartbeat; they are handed over once."""
        with self._lock:
            out = list(self._new)
            self._new.clear()
            return out

    def requeue(self, events: list[MonitorEvent]) -> None:
        """Give events back (the heartbeat could not look at them)."""
        with self._lock:
            self._new.extendleft(reversed(events))
