"""Watch tasks: a one-shot condition on a camera's results that tells its asker once, or says it expired, then ends.

`WatchBook` listens to pipeline results beside the monitor (the same tier-1 evaluators: `watch_conditions.py`),
keeps the watches in the bot's storage so they survive a restart, and answers through the alert router to the place
each was asked (its channel and thread, the asker mentioned); it bypasses the cooldown, mutes and quiet hours,
because a person asked for this one answer. With `confirm`, the model looks at the frame first (`FrameCheck`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.rules import Firing, RuleState
from bot.monitoring.watch_conditions import Condition, condition_from_dict
from bot.storage import Storage

if TYPE_CHECKING:
    from bot.backends.base import InferenceResult, PipelineHandle

log = logging.getLogger(__name__)

DEFAULT_SECONDS = 2 * 3600.0
MIN_SECONDS, MAX_SECONDS = 5.0, 24 * 3600.0
MAX_WATCHES = 100  # at once, in all: each is checked on every frame of its camera
EXPIRED = "watch_expired"  # the rule id of an expiry line (a notice, not a detection)
ANSWERED = "watch:"  # the rule id of a watch's answer: this prefix and the watch id
FrameCheck = Callable[[bytes, str], Awaitable[bool | None]]  # (frame, question) -> yes / no / could not look
_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?)$",
                       re.I)
_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")


def parse_duration(raw: str) -> float:
    """'30s', '90m', '2h' -> seconds, within the bounds (ValueError saying what is accepted)."""
    m = _DURATION.match(raw.strip())
    if not m:
        raise ValueError(f"`for` takes a duration like 30s, 90m or 2h, not {raw!r}.")
    unit = m["unit"][0].lower()
    return bounded(float(m["n"]) * {"s": 1, "m": 60, "h": 3600}[unit])


def bounded(seconds: float | None) -> float:
    """The one expiry check of every surface: default 2 h, between 5 s and 24 h."""
    if seconds is None:
        return DEFAULT_SECONDS
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ValueError(f"A watch lasts between {MIN_SECONDS:g} s and {MAX_SECONDS / 3600:g} h; "
                         f"ask for a shorter or longer time (e.g. `for 2h`).")
    return float(seconds)


def span(seconds: float) -> str:
    """'45 s', '90 min', '2 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h".replace(".0 h", " h")


@dataclass(frozen=True)
class Watch:
    """One watch: what to wait for on which camera, until when, and where its answer goes (channel None: the
    camera's alert route; thread_ts: the thread it was asked in)."""

    id: str
    camera: str
    condition: Condition
    created_at: float
    expires_at: float
    confirm: bool = False
    user_id: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    about: str = ""  # the asker's own words ("a truck reaches the dock"), shown and given to the model with confirm

    @staticmethod
    def new_id() -> str:
        return "w" + uuid.uuid4().hex[:6]

    @property
    def mention(self) -> str:
        return f"<@{self.user_id}> " if self.user_id and _USER.match(self.user_id) else ""

    def line(self, now: float) -> str:
        """'`w1a2b3c` on *dock*: a truck appears (asked by <@U1>), 1.9 h left, confirmed by the model'."""
        what = f"{self.about} — {self.condition.describe()}" if self.about else self.condition.describe()
        who = f" (asked by <@{self.user_id}>)" if self.mention else ""
        checked = ", confirmed by the model before it tells" if self.confirm else ""
        return f"`{self.id}` on *{self.camera}*: {what}{who}, {span(max(0.0, self.expires_at - now))} left{checked}"

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "camera": self.camera, "condition": self.condition.as_dict(),
                "created_at": self.created_at, "expires_at": self.expires_at, "confirm": self.confirm,
                "user_id": self.user_id, "channel": self.channel, "thread_ts": self.thread_ts, "about": self.about}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Watch:
        return cls(str(r["id"]), str(r["camera"]), condition_from_dict(r["condition"]), float(r["created_at"]),
                   float(r["expires_at"]), bool(r.get("confirm")), r.get("user_id"), r.get("channel"),
                   r.get("thread_ts"), str(r.get("about") or ""))


class WatchBook:
    """The watches that run: stored, checked on their camera's results (pipeline threads), ended on their answer."""

    def __init__(self, storage: Storage, router: AlertRouter, clock: Callable[[], float] = time.time) -> None:
        self.router, self._clock = router, clock
        self._table = storage.table("watches")
        self._lock = threading.RLock()
        self._watches: dict[str, Watch] = {}
        for r in self._table.all():
            try:
                w = Watch.from_record(r)
            except (KeyError, TypeError, ValueError) as exc:  # a record this version cannot read: said, then skipped
                log.warning("watch %s not restored: %s", r.get("id"), exc)
                continue
            self._watches[w.id] = w
        self._state: dict[str, RuleState] = {}
        self._checking: set[str] = set()  # fired, the model still looking: not checked again meanwhile
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[Any] = set()  # asyncio tasks and, from pipeline threads, concurrent futures
        self._loop: asyncio.AbstractEventLoop | None = None
        self.confirm: FrameCheck | None = None  # set by the composition root when a model is configured

    def start(self, pipelines: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Listen to pipeline results and time every stored watch (those that ran out meanwhile end at once)."""
        self._loop = loop or asyncio.get_running_loop()
        if pipelines is not None:
            pipelines.add_result_listener(self.on_result)
        for w in self.all():
            self._time(w)

    # the book -------------------------------------------------------------
    def add(self, watch: Watch) -> Watch:
        with self._lock:
            if len(self._watches) >= MAX_WATCHES:
                raise ValueError(f"{MAX_WATCHES} watches run already; remove one with `/vision unwatch ID` first.")
            self._table.upsert(watch.record(), id=watch.id)
            self._watches[watch.id] = watch
        self._time(watch)
        return watch

    def remove(self, watch_id: str) -> Watch | None:
        with self._lock:
            w = self._watches.pop(watch_id, None)
            self._table.remove(id=watch_id)
            self._state.pop(watch_id, None)
            self._checking.discard(watch_id)
            timer = self._timers.pop(watch_id, None)
        if timer is not None:
            timer.cancel()
        return w

    def get(self, watch_id: str) -> Watch | None:
        with self._lock:
            return self._watches.get(watch_id)

    def all(self, camera: str | None = None) -> list[Watch]:
        with self._lock:
            out = sorted(self._watches.values(), key=lambda w: w.created_at)
        return out if camera is None else [w for w in out if w.camera == camera]

    def now(self) -> float:
        return self._clock()

    # checking -------------------------------------------------------------
    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        """Result listener (pipeline thread): each watch on this camera looks at the result; a hit is answered."""
        now = self._clock()
        hits: list[tuple[Watch, Firing]] = []
        with self._lock:
            for w in self._watches.values():
                if w.camera != handle.name or w.id in self._checking or now >= w.expires_at:
                    continue
                hit = w.condition.evaluate(self._state.setdefault(w.id, RuleState()), result, now)
                if hit is not None:
                    self._checking.add(w.id)
                    hits.append((w, hit))
        for w, hit in hits:
            self._spawn_threadsafe(self._answer(w, hit, result.frame, handle.pipeline_id))

    async def _answer(self, w: Watch, hit: Firing, frame: bytes | None, pipeline_id: str) -> None:
        """Tell the asker (after the model agreed, with confirm) and end the watch; a 'no' lets it watch on."""
        note = ""
        if w.confirm:
            verdict = await self._look(w, frame)
            if verdict is False:
                log.info("watch %s: the model did not see %s; watching on", w.id, w.condition.describe())
                with self._lock:
                    self._checking.discard(w.id)
                return
            note = " (the model agreed on the frame)" if verdict else " (not confirmed: the model could not look)"
        if self.remove(w.id) is None:
            return  # removed meanwhile (unwatch, expiry): nobody waits for this answer any more
        text = f"{w.mention}{hit.text}{note}. Watch `{w.id}` ({w.condition.describe()}) is done."
        await self._tell(w, text, ANSWERED + w.id, hit.counts, frame, pipeline_id)

    async def _look(self, w: Watch, frame: bytes | None) -> bool | None:
        if self.confirm is None or not frame:
            return None
        question = f"Does this frame from camera {w.camera} show that {w.condition.describe()}?"
        if w.about:
            question += f" The person asked to be told about: {w.about!r}."
        try:
            return await self.confirm(frame, question)
        except Exception:  # noqa: BLE001 - a failed look must not swallow the answer
            log.exception("watch %s: the model's look failed", w.id)
            return None

    async def _expire(self, watch_id: str) -> None:
        w = self.remove(watch_id)
        if w is None:
            return
        text = (f"{w.mention}Watch `{w.id}` on {w.camera} ended: {w.condition.describe()} did not happen within "
                f"{span(w.expires_at - w.created_at)}.")
        await self._tell(w, text, EXPIRED, {}, None, None)

    async def _tell(self, w: Watch, text: str, rule: str, counts: dict[str, int], frame: bytes | None,
                    pipeline_id: str | None) -> None:
        alert = Alert(w.camera, rule, text, dict(counts), self._clock(), frame, pipeline_id, channel=w.channel,
                      thread_ts=w.thread_ts)
        await self.router.deliver(alert)

    # timing ---------------------------------------------------------------
    def _time(self, w: Watch) -> None:
        """Its expiry on the loop (call on the loop); one that ran out while the bot was down ends now."""
        loop = self._loop
        if loop is None:
            return  # not started: start() times it
        delay = max(0.0, w.expires_at - self._clock())
        with self._lock:
            old = self._timers.pop(w.id, None)
            if old is not None:
                old.cancel()
            self._timers[w.id] = loop.call_later(delay, lambda: self._spawn(self._expire(w.id)))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _spawn_threadsafe(self, coro: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            log.warning("watch answer not delivered: the watch book is not started")
            coro.close()
            return
        fut = asyncio.run_coroutine_threadsafe(coro, loop)
        self._tasks.add(fut)
        fut.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Wait until the answers and expiries under way are delivered."""
        while pending := [t for t in list(self._tasks) if not t.done()]:
            await asyncio.gather(*(asyncio.wrap_future(t) if not isinstance(t, asyncio.Future) else t
                                   for t in pending), return_exceptions=True)

    def close(self) -> None:
        """Stop the timers (the watches stay stored for the next start)."""
        with self._lock:
            timers, self._timers = list(self._timers.values()), {}
        for t in timers:
            t.cancel()
        self._loop = None
