"""What outlives a pipeline: when a camera's pipeline finishes, stops or fails, what people set on that camera can no
longer act, and each of them is told so where it was set, once, instead of finding out from silence.

What an NVR user expects of each kind when the camera goes away:
- a watch (one question with a deadline) ends now, unanswered, saying why: "7 min left" and then an expiry alert
  would be a wait for something that cannot come (`WatchBook.outlived`);
- a rule or a scheduled snapshot is a standing setting of the camera: it is paused, said so, and acts again by itself
  when a pipeline runs on that camera again (the monitor's rules; the scheduler's snapshot jobs); `/vision rules` and
  `/vision jobs` show it paused and why;
- an alert route (the camera's alerts to a channel) stays; its channel is told the alerts stop until the camera runs
  again.
Each kind contributes its `Notice`s (`add`); the notices going to one place (channel and thread) are said in one
message there, mentioning whoever set them. Only a pipeline that ran (delivered results) is said to have ended: one
whose source never opened was never acting, and its failure is said where it was started.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.backends.base import LIVE, InferenceResult, PipelineHandle
from bot.media.redaction import redact
from bot.media.sources import is_live
from bot.monitoring.alerts import Alert, AlertRouter

log = logging.getLogger(__name__)

RULE = "pipeline_ended"  # the rule id of these notices (a health event in the event log and the webhook)


@dataclass(frozen=True)
class Notice:
    """One object's words for the people who set it: where they go (channel None: the camera's alert route; a
    thread), whom to mention (a Slack user, None: nobody), and what became of it."""

    channel: str | None
    thread_ts: str | None
    user: str | None
    text: str  # "watch `w1a2b3` (a truck appears) ended without an answer"


Contributor = Callable[[PipelineHandle], list[Notice]]  # called once, on the loop, when a camera's pipeline ended


@dataclass(frozen=True)
class Ending:
    """How and when a camera's last pipeline ended: shown by `/vision rules|jobs|watches` while it stays down."""

    camera: str
    why: str  # "finished (its video file ran out)", "was stopped", "failed: cannot open …"
    at: float
    pipeline_id: str

    def when(self, tz: str) -> str:
        return datetime.fromtimestamp(self.at, ZoneInfo(tz)).strftime("%H:%M %Z")

    def line(self, tz: str = "UTC") -> str:
        """'pipeline cam1 finished (its video file ran out) at 14:03 UTC'."""
        return f"pipeline {self.camera} {self.why} at {self.when(tz)}"


def why_ended(h: PipelineHandle) -> str:
    if h.status == "finished":
        return "finished (its video file ran out)" if not is_live(h.video_reference) else "ended (the stream stopped)"
    if h.status == "error":
        return f"failed: {redact(h.error or 'unknown error')}"
    return "was stopped"


class Outlived:
    """Notices the end of every pipeline that ran (`check`, on the monitor's health tick) and tells what outlived it."""

    def __init__(self, router: AlertRouter, timezone: str = "UTC", clock: Callable[[], float] = time.time) -> None:
        self.router, self.timezone, self._clock = router, timezone, clock
        self._contributors: list[Contributor] = [self._routes]
        self._lock = threading.Lock()
        self._ran: set[str] = set()  # pipelines that delivered a result (pipeline threads add to it)
        self._said: set[str] = set()  # pipelines whose end was said
        self._ended: dict[str, Ending] = {}  # camera -> how its last pipeline ended, while none runs on it

    def add(self, contributor: Contributor) -> None:
        """`contributor(handle)` -> the notices of one kind of object on the camera of a pipeline that ended."""
        self._contributors.append(contributor)

    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        """Result listener (pipeline thread): this pipeline ran."""
        if handle.pipeline_id not in self._ran:
            with self._lock:
                self._ran.add(handle.pipeline_id)

    def ended(self, camera: str) -> Ending | None:
        """How the camera's last pipeline ended, while no pipeline runs on it (None: one runs, or none ever ran)."""
        with self._lock:
            return self._ended.get(camera)

    async def check(self, handles: list[PipelineHandle]) -> list[Alert]:
        """Say, once, the end of each pipeline that ran and is no longer live (no other runs on its camera now);
        forget the end of a camera that runs again. Returns the notices sent."""
        live = {h.name for h in handles if h.status in LIVE}
        ended: list[PipelineHandle] = []
        with self._lock:
            for camera in live:
                self._ended.pop(camera, None)
            for h in handles:
                if h.status in LIVE or h.pipeline_id not in self._ran or h.pipeline_id in self._said:
                    continue
                self._said.add(h.pipeline_id)
                if h.name not in live:
                    self._ended[h.name] = Ending(h.name, why_ended(h), self._clock(), h.pipeline_id)
                    ended.append(h)
        sent = []
        for h in ended:
            sent += await self._tell(h)
        return sent

    async def _tell(self, h: PipelineHandle) -> list[Alert]:
        notices: list[Notice] = []
        for contributor in list(self._contributors):
            try:
                notices += contributor(h)
            except Exception:  # one kind's failure never keeps the others from being told
                log.exception("what outlived pipeline %s: a contributor failed", h.name)
        places: dict[tuple[str | None, str | None], list[Notice]] = {}
        for n in notices:
            places.setdefault((n.channel, n.thread_ts), []).append(n)
        head = f"pipeline {h.name} {why_ended(h)}"
        sent = []
        for (channel, thread), said in places.items():
            users = list(dict.fromkeys(n.user for n in said if n.user))
            mentions = "".join(f"<@{u}> " for u in users)
            text = f"{mentions}{head}: " + "; ".join(dict.fromkeys(n.text for n in said)) + "."
            alert = Alert(h.name, RULE, text, time=self._clock(), pipeline_id=h.pipeline_id, channel=channel,
                          thread_ts=thread, notify=users[0] if len(users) == 1 else None, cooldown_seconds=0.0)
            await self.router.deliver(alert)
            sent.append(alert)
        return sent

    def _routes(self, h: PipelineHandle) -> list[Notice]:
        """A route of this camera's alerts: its channel hears they stop until the camera runs again."""
        channel = self.router.routes().get(h.name)
        if channel is None:
            return []
        owner = self.router.route_owner(h.name)
        return [Notice(channel, None, owner.user if owner is not None and owner.member else None,
                       f"its alerts, routed here, stop until {h.name} runs again")]
