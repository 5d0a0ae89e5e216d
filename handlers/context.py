"""SlackBot: the adapter's state shared by every handler (runtime, thread book, queues, identity)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.monitoring.lanes import Lanes
from handlers.answers.feedback import RunningTurns
from handlers.answers.opening import Openings
from handlers.state.alert_book import AlertBook
from handlers.state.inflight import InflightBook
from handlers.state.queue import SessionQueues
from handlers.state.threads import Deduper, ThreadBook
from handlers.transport.files import FileFetcher
from handlers.transport.people import PeopleBook
from handlers.transport.socket import AckGate

if TYPE_CHECKING:
    from bot.agent.loop import Agent
    from bot.config import Settings
    from bot.runtime import Runtime

log = logging.getLogger(__name__)


@dataclass
class Stats:
    """What the health endpoint and the benchmark read."""

    events: int = 0
    turns: int = 0
    turn_errors: int = 0
    last_event: float | None = None


@dataclass
class SlackBot:
    """Everything the Slack handlers share. Built by `handlers.register`; reached in listeners as context["vision"]."""

    runtime: Runtime
    app: AsyncApp
    client: AsyncWebClient  # the app's client (used off the request path: turns, alerts)
    threads: ThreadBook
    fetcher: FileFetcher
    inflight: InflightBook  # turns taken and not finished, finished after a crash
    dedupe: Deduper = field(default_factory=Deduper)
    lanes: Lanes = field(default_factory=Lanes)  # per-channel send order for writes outside a turn (alerts)
    queues: SessionQueues | None = None
    posted_alerts: AlertBook | None = None  # the alert messages posted (updated in place, marked false alarms)
    team_id: str = ""
    bot_user_id: str = ""
    bot_id: str = ""
    status_supported: dict[str, bool] = field(default_factory=dict)  # channel -> setStatus works there
    stream_supported: dict[str, bool] = field(default_factory=dict)  # channel -> False: Slack refused streaming
    stats: Stats = field(default_factory=Stats)
    socket: Any = None  # the socket-mode client, for health
    feedback: set[asyncio.Task[Any]] = field(default_factory=set)  # "working" reactions still in flight
    feedback_drain: asyncio.Task[None] | None = None  # the one wait of a burst's turns for `feedback` (messages.py)
    running: RunningTurns = field(default_factory=RunningTurns)  # turns a Stop button can cancel
    people: PeopleBook = field(default_factory=PeopleBook)  # display names, for marking who wrote what
    acks: AckGate = field(default_factory=AckGate)  # feedback waits for the socket's owed acks (transport/socket.py)
    openings: Openings = field(default_factory=Openings)  # a 👀 waits for the first steps due (answers/opening.py)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def agent(self) -> Agent:
        return self.runtime.agent  # built: `serve` starts the runtime before `register` builds this

    def llm_unavailable(self) -> str | None:
        """Why free text cannot go to Claude right now (one line), or None."""
        return self.runtime.llm_unavailable()

    def set_identity(self, auth_test: dict[str, Any]) -> None:
        """Who we are, from auth.test: our own messages are recognised by these ids."""
        self.team_id, self.bot_user_id = auth_test["team_id"], auth_test["user_id"]
        self.bot_id = auth_test.get("bot_id") or ""

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Fire-and-forget work that must not be garbage-collected mid-flight (reactions, uploads)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("background Slack call failed: %s", task.exception())

    def note_event(self) -> None:
        self.stats.events += 1
        self.stats.last_event = time.time()

    async def close(self, grace: float = 10.0) -> None:
        """Let turns already taken finish (up to `grace` s: a deploy's SIGTERM should not eat answers), then stop."""
        if self.queues is not None:
            try:
                await self.queues.drain(grace)
            except TimeoutError:
                log.warning("stopping with %d thread(s) still busy", self.queues.busy_sessions)
            await self.queues.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.fetcher.close()
        self.threads.close()
        self.inflight.close()
        if self.posted_alerts is not None:
            self.posted_alerts.close()
