"""Watch tasks: a one-shot condition on a camera's results that tells its asker once, or says it expired, then ends.

`WatchBook` listens to pipeline results beside the monitor (the same tier-1 evaluators: `watch_conditions.py`),
keeps the watches in the bot's storage so they survive a restart, and answers through the alert router to the place
each was asked (its channel and thread, the asker mentioned); it bypasses the cooldown, mutes and quiet hours,
because a person asked for this one answer. With `confirm`, the model looks at the frame first (`FrameCheck`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bot.llm.budget import Payer, payer_for
from bot.llm.errors import LLMBudgetExceeded
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.outlived import Notice, why_ended
from bot.monitoring.rules import Firing, RuleState
from bot.monitoring.watch import ANSWERED, EXPIRED, Watch, span
from bot.objects.owner import Owner
from bot.objects.text import untrusted
from bot.storage import Storage, records

if TYPE_CHECKING:
    from bot.backends.base import InferenceResult, PipelineHandle

log = logging.getLogger(__name__)

ENDED_SHOWN = 3600.0  # seconds a watch that ended with its pipeline is still listed, marked ended
MAX_GONE = 100  # such watches kept for the listing
MAX_LOOKS = 10  # model looks a `confirm` watch may ask for; then it ends, said (a flickering detector costs no more)
# (frame, question, who pays) -> yes / no / could not look; LLMBudgetExceeded when the payer's share is spent
FrameCheck = Callable[[bytes, str, Payer], Awaitable[bool | None]]


class WatchBook:
    """The watches that run: stored, checked on their camera's results (pipeline threads), ended on their answer."""

    def __init__(self, storage: Storage, router: AlertRouter, clock: Callable[[], float] = time.time) -> None:
        self.router, self._clock = router, clock
        self._table = storage.table("watches")
        self._lock = threading.RLock()
        # a record this version cannot read is set aside (kept beside the store, said once), the others come back
        self._watches: dict[str, Watch] = {w.id: w for w in records.load(storage, "watches", Watch.from_record)}
        self._state: dict[str, RuleState] = {}
        self._checking: set[str] = set()  # fired, the model still looking: not checked again meanwhile
        self._looks: dict[str, int] = {}  # model looks each confirm watch had (this process)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[Any] = set()  # asyncio tasks and, from pipeline threads, concurrent futures
        self._loop: asyncio.AbstractEventLoop | None = None
        self.confirm: FrameCheck | None = None  # set by the composition root when a model is configured
        self.model_ready: Callable[[], bool] = lambda: True  # whether `confirm` can reach the model (runtime's llm_ready)
        self._gone: dict[str, tuple[Watch, str, float]] = {}  # ended with their pipeline: id -> (watch, why, when)

    def start(self, pipelines: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Listen to pipeline results and time every stored watch (those that ran out meanwhile end at once)."""
        self._loop = loop or asyncio.get_running_loop()
        if pipelines is not None:
            pipelines.add_result_listener(self.on_result)
        for w in self.all():
            self._time(w)

    # the book -------------------------------------------------------------
    def add(self, watch: Watch) -> Watch:
        """Store and time a watch (its checks, owner and caps: bot/commands/watches.py create_watch)."""
        with self._lock:
            self._table.upsert(watch.record(), id=watch.id)
            self._watches[watch.id] = watch
        self._time(watch)
        return watch

    def remove(self, watch_id: str) -> Watch | None:
        with self._lock:
            w = self._watches.pop(watch_id, None)
            self._table.remove(id=watch_id)
            self._state.pop(watch_id, None)
            self._looks.pop(watch_id, None)
            self._checking.discard(watch_id)
            timer = self._timers.pop(watch_id, None)
        if timer is not None:
            timer.cancel()
        return w

    def get(self, watch_id: str) -> Watch | None:
        with self._lock:
            return self._watches.get(watch_id)

    def outlived(self, h: PipelineHandle) -> list[Notice]:
        """The pipeline on a watch's camera ended (bot/monitoring/outlived.py): the watch can no longer be
        answered, so it ends now, told where it was asked, and `/vision watches` shows it ended until it would have
        run out (at most ENDED_SHOWN)."""
        notices = []
        for w in self.all(h.name):
            if self.remove(w.id) is None:
                continue
            why = f"pipeline {h.name} {why_ended(h)}"
            with self._lock:
                self._gone[w.id] = (w, why, self._clock())
                while len(self._gone) > MAX_GONE:
                    self._gone.pop(next(iter(self._gone)))
            notices.append(Notice(w.channel, w.thread_ts, w.user_id if w.mention else None,
                                  f"watch `{w.id}` ({w.condition.describe()}) ended without an answer"))
        return notices

    def ended(self, camera: str | None = None) -> list[tuple[Watch, str, float]]:
        """Watches ended because their pipeline did, while they would still have run (and ENDED_SHOWN at most):
        (watch, why, when)."""
        now = self._clock()
        with self._lock:
            for wid, (w, _, at) in list(self._gone.items()):
                if now >= min(w.expires_at, at + ENDED_SHOWN):
                    del self._gone[wid]
            out = list(self._gone.values())
        return [g for g in out if camera is None or g[0].camera == camera]

    def all(self, camera: str | None = None) -> list[Watch]:
        with self._lock:
            out = sorted(self._watches.values(), key=lambda w: w.created_at)
        return out if camera is None else [w for w in out if w.camera == camera]

    def can_confirm(self) -> bool:
        """Whether a `confirm` watch's sighting gets the model's look (else it is told unconfirmed)."""
        return self.confirm is not None and self.model_ready()

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
            try:
                verdict = await self._look(w, frame)
            except LLMBudgetExceeded as exc:  # its owner's share is spent: the watch stops, saying so where asked
                if self.remove(w.id) is not None:
                    await self._tell(w, f"{w.mention}Watch `{w.id}` on {w.camera} stopped before it could confirm "
                                     f"{w.condition.describe()}: {exc}.", EXPIRED, {}, None, None)
                return
            if verdict is False:
                log.info("watch %s: the model did not see %s; watching on", w.id, w.condition.describe())
                with self._lock:
                    self._checking.discard(w.id)
                    looks = self._looks[w.id] = self._looks.get(w.id, 0) + 1
                if looks >= MAX_LOOKS and self.remove(w.id) is not None:
                    await self._tell(w, f"{w.mention}Watch `{w.id}` on {w.camera} ended: the model did not see "
                                     f"{w.condition.describe()} in {looks} sightings; ask again without `confirm`, "
                                     "or with a stricter condition.", EXPIRED, {}, None, None)
                return
            note = " (the model agreed on the frame)" if verdict else " (not confirmed: the model could not look)"
        if self.remove(w.id) is None:
            return  # removed meanwhile (unwatch, expiry): nobody waits for this answer any more
        text = f"{w.mention}{hit.text}{note}. Watch `{w.id}` ({w.condition.describe()}) is done."
        await self._tell(w, text, ANSWERED + w.id, hit.counts, frame, pipeline_id)

    async def _look(self, w: Watch, frame: bytes | None) -> bool | None:
        """The model's yes/no on the frame, billed to the watch's owner (LLMBudgetExceeded: their share is spent)."""
        if self.confirm is None or not frame:
            return None
        # camera and classes are names (bot/objects/text.py); the asker's own words go in as quoted data
        question = f"Does this frame from camera {w.camera} show that {w.condition.describe()}?"
        if w.about:
            question += "\nWhat the person asked to be told about, in their words:\n" + untrusted("request", w.about)
        owner = w.owner or (Owner(user=w.user_id, channel=w.channel) if w.user_id else Owner())
        try:
            return await self.confirm(frame, question, payer_for(owner.user, owner.channel))
        except LLMBudgetExceeded:
            raise
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
                      thread_ts=w.thread_ts, notify=w.user_id)
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
