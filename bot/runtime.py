"""The composition root: builds every long-lived piece from Settings, in order, and shuts them down."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from bot.agent.loop import Agent
from bot.agent.registry import ToolRegistry
from bot.agent.sessions import SessionStore
from bot.backends import make_backend
from bot.backends.base import LIVE
from bot.backends.provider import BackendProvider
from bot.commands.context import CommandContext
from bot.commands.relay import LocalApi, Progress
from bot.config import Settings
from bot.llm.client import LLMClient
from bot.llm.errors import NO_KEY
from bot.llm.look import AlertLook, FrameLook
from bot.media.redaction import add_secrets, redact
from bot.monitoring.alert_frames import AlertFrames
from bot.monitoring.alerts import DEFAULT_CAMERA, Alert, AlertRouter
from bot.monitoring.events_log import EventLog
from bot.monitoring.monitor import Monitor
from bot.monitoring.search.pictures import EventPictures
from bot.monitoring.verify import Verifier
from bot.monitoring.watches import WatchBook
from bot.monitoring.webhooks.sender import WebhookSender, from_settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.restore import BackgroundRestore
from bot.pipelines.status import status_line
from bot.process import plural
from bot.recipes.service import RecipeService
from bot.rights import LOCAL_CHANNEL
from bot.scheduling.inputs import SchedulerInputs
from bot.scheduling.scheduler import Scheduler
from bot.services import Services
from bot.storage import open_storage, records
from tools import build_registry
from workspace import Workspace
from workspace.memory import MemoryStore
from workspace.owner import OwnerLock

log = logging.getLogger(__name__)


class Runtime:
    """settings -> workspace -> memory -> router -> pipelines -> monitor -> watches -> tools -> recipes -> services -> LLM ->
    sessions -> agent -> scheduler (each built once, from what is built before it).

    The backend is the one lazy piece (a BackendProvider: `inference` is imported on first use only). Replace
    `runtime.backend` before `start()` to run on another backend (tests do). Use `async with Runtime(settings) as rt:`
    or `await rt.start()` ... `await rt.close()`.
    """

    # built by start(), in this order
    memory: MemoryStore
    events: EventLog
    router: AlertRouter
    pipelines: PipelineManager
    monitor: Monitor
    watches: WatchBook
    tools: ToolRegistry
    recipes: RecipeService
    llm: LLMClient
    sessions: SessionStore
    agent: Agent

    def __init__(
        self, settings: Settings, *, background: bool = True, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings = settings
        # The bot's own secrets are masked by the one redactor wherever text leaves (Slack, CLI, logs, memory).
        add_secrets(v.get_secret_value() for v in (settings.llm.api_key, settings.inference.api_key,
                                                    settings.slack.bot_token, settings.slack.app_token,
                                                    settings.webhook.token, settings.api.token,
                                                    settings.mcp.token) if v)
        self.clock = clock  # the router, monitor and memory share it (tests move it)
        self.background = background  # restore pipelines + run the scheduler; off for one-shot commands
        self.workspace = Workspace(settings.workspace)
        self.created: list[Path] = []  # what workspace init created on start
        self.backend = BackendProvider(lambda: make_backend(settings))
        self.services = Services(workspace=self.workspace)
        self.scheduler: Scheduler | None = None
        self.webhooks: WebhookSender | None = None  # the webhook.url sink, when one is configured
        self.restoring: BackgroundRestore | None = None  # saved pipelines coming back (background mode)
        self.owner = OwnerLock(self.workspace.state_dir)  # held in background mode: one such process per workspace
        # The holder answers `/vision` lines typed beside it (`chat -m`), so one workspace shows one truth
        self.local_api = LocalApi(self.workspace.state_dir, self.terminal_context)
        self._started = False
        self._announced = False
        self._stored_mark = records.mark()  # the stores this runtime opens say what they set aside after this
    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # assembly -----------------------------------------------------------
    async def start(self) -> Runtime:
        """Build everything, restore pipelines saved by the last run, start the scheduler."""
        if self._started:
            return self
        self._started = True
        try:
            await self._assemble()
        except BaseException:
            await self.close()  # nothing half-started is left running (pipeline threads, scheduler)
            raise
        return self

    async def _assemble(self) -> None:
        s, ws = self.settings, self.workspace
        self.created = ws.init()
        if self.background:
            await self._own_workspace()
        self.memory = MemoryStore(ws.root, timezone=s.heartbeat.timezone, clock=self.clock, redact=redact)
        # each event keeps a small picture and its words: what `search_events` finds and shows (bounded, pruned with it)
        self.events = EventLog(ws.state_dir / "events.jsonl", redact=redact,
                               pictures=EventPictures(ws.state_dir / "event_pictures"))
        self.router = AlertRouter(
            ws.state_dir / "alerts.json", default_channel=s.slack.alert_channel,
            cooldown_seconds=s.monitoring.alert_cooldown_seconds, quiet_hours=s.monitoring.quiet_hours,
            timezone=s.heartbeat.timezone, clock=self.clock, events=self.events,
            frames=AlertFrames(ws.state_dir / "alert_frames"),
            storage=open_storage(ws.state_dir / "alerts.json", s.storage.backend),
        )
        # It sends the event log, every event in id order; the workspace's owner from where the last run stopped (a
        # one-shot command sends its own events only). It only queues: a dead endpoint never delays the other sinks.
        cursor = ws.state_dir / "webhook_cursor.json" if self.background else None
        self.webhooks = from_settings(s, self.events, cursor)
        if self.webhooks is not None:
            self.webhooks.bind(asyncio.get_running_loop())
            self.router.add_sink(self.webhooks, after_clip=True)  # a posted alert's frame and clip_url
            self.router.observe_held(self.webhooks.held)  # a held event's frame (webhook.inline_frames)
        # A one-shot's pipelines die with it: saved, a later `serve` would restore them as its own.
        self.pipelines = PipelineManager(self.backend, ws.active_state_path, s, persist=self.background)
        self.monitor = Monitor(
            settings=s, router=self.router, memory=self.memory, pipelines=self.pipelines, clock=self.clock,
            clips=self.pipelines.clips,
        )
        self.watches = WatchBook(open_storage(ws.state_dir / "watches.json", s.storage.backend), self.router,
                                 clock=self.clock)
        self.monitor.outlived.add(self.watches.outlived)  # a watch on a camera whose pipeline ended ends, said so
        self.tools = build_registry()
        self.recipes = RecipeService(ws, s, self.tools)  # replays through the agent's own registry
        self.services = Services(
            workspace=ws, backend=self.backend, pipelines=self.pipelines, memory=self.memory, router=self.router,
            monitor=self.monitor, events=self.events, recipes=self.recipes, watches=self.watches,
        )
        self.llm = LLMClient(s, usage_path=ws.state_dir / "usage.json")
        self.watches.confirm = FrameLook(self.llm)  # `confirm` watches ask the model before they tell
        m = s.monitoring  # verified alerts: the model checks a rule's alert and it is updated in place
        self.monitor.verifier = Verifier(AlertLook(self.llm), m.verify, m.verify_per_rule_hour,
                                         m.verify_timeout_seconds, clock=self.clock)
        self.watches.model_ready = lambda: self.llm_ready  # a `confirm` watch says at once when it cannot
        self.sessions = SessionStore(ws.sessions_dir)
        self.agent = Agent(
            llm=self.llm, tools=self.tools, sessions=self.sessions, settings=s, workspace=ws,
            services=self.services, pipelines_text=self.pipelines_text,
            turn_end=[self.recipes.on_turn_end],  # recipes keep the turns that set something up
        )
        if not self.background:
            return
        # Above the agent: it drives heartbeats and cron jobs through it (the agent never knows of it).
        self.scheduler = Scheduler(SchedulerInputs(
            s, agent=self.agent, monitor=self.monitor, router=self.router, pipelines=self.pipelines,
            memory=self.memory, workspace=ws))
        self.services.jobs.scheduler = self.scheduler  # the schedule_job tool finds it there
        self.monitor.start()  # listens to pipeline results before any pipeline is restored
        self.watches.start(self.pipelines)  # beside it; stored watches are timed again (ran out: said now)
        # Saved pipelines come back in the background: the Slack connect and the CLI prompt never wait for a camera.
        self.restoring = BackgroundRestore(self.pipelines)
        self.restoring.start()
        self.scheduler.start()
        try:
            await self.local_api.start()
        except OSError as exc:  # no loopback to listen on: lines typed beside it say the holder's pid instead
            log.warning("no local API for /vision lines typed beside this process: %s", exc)

    async def _own_workspace(self) -> None:
        """Hold the workspace before anything restores or schedules; WorkspaceBusy (one line), or with
        `storage.standby` wait until the holder exits, however it exits."""
        if self.owner.try_take():
            return
        if not self.settings.storage.standby:
            raise self.owner.busy(self.workspace.root)
        log.warning("standby: workspace %s is run by pid %s; taking over when it exits",
                    self.workspace.root, self.owner.holder())
        while not self.owner.try_take():
            await asyncio.sleep(0.5)
        log.warning("took over workspace %s: restoring its pipelines, starting the scheduler", self.workspace.root)

    async def announce_stored(self) -> str | None:
        """The one note to the operator about stored data set aside or recovered at start-up (bot/storage/records.py),
        posted once where alerts go; call it once the adapter's sinks are attached. The text, or None."""
        lines = records.notes(self._stored_mark)
        if not lines or self._announced:
            return None
        self._announced = True
        text = ("Stored data that did not fit was set aside at start-up (nothing else was lost; the rest loaded): "
                + "; ".join(lines[:5]) + (f"; and {len(lines) - 5} more" if len(lines) > 5 else "")
                + ". The records are kept beside their files (NAME.corrupt-TIME, or a set-aside file the line names) for you to look at.")
        await self.router.dispatch(Alert(DEFAULT_CAMERA, "stored_data", redact(text), cooldown_seconds=0.0))
        return text

    # use ----------------------------------------------------------------
    @property
    def llm_ready(self) -> bool:
        """True when free text can go to Claude (an API key is set and the agent is built)."""
        return self._started and self.llm.available

    def llm_unavailable(self) -> str | None:
        """Why free text cannot go to Claude right now (one line a user can act on), or None."""
        return None if self.llm_ready else NO_KEY

    def pipelines_text(self) -> str:
        """Running pipelines for the dynamic part of the prompt (sources credential-redacted)."""
        return "\n".join("- " + status_line(h, tally=self.pipelines.tally(h.pipeline_id)) for h in self.pipelines.snapshot())

    def terminal_context(self, session: str, progress: Progress | None = None, cwd: Path | None = None
                         ) -> CommandContext:
        """The context of a `/vision` line typed at a terminal of this machine (the REPL, `chat -m`, or one relayed
        from beside this process: bot/commands/relay.py): the operator, who may also name local files (relative to
        `cwd`, where they typed it)."""
        ctx = self.command_context(user_id=LOCAL_CHANNEL, channel_id=LOCAL_CHANNEL, session_key=f"cli:{session}",
                                   operator=True)
        ctx.local_files, ctx.progress, ctx.cwd = True, progress, cwd
        return ctx

    def command_context(self, user_id: str | None = None, channel_id: str | None = None,
                        session_key: str | None = None, operator: bool = False) -> CommandContext:
        """The context `bot.commands.dispatch.run_command` needs, from this runtime's services (operator: the CLI,
        REST and MCP adapters' own commands; never a Slack person)."""
        return CommandContext(self.settings, self.services, user_id, channel_id, session_key, operator,
                              scheduler=self.scheduler)

    def holding(self) -> str:
        """What this process holds, for its ready line (bot/process.py): "2 pipelines (door running, yard starting),
        3 scheduled jobs, 1 watch", or "no pipelines"."""
        live = [h for h in self.pipelines.snapshot() if h.status in LIVE] if self._started else []
        parts = [plural(len(live), "pipeline") + (" (" + ", ".join(f"{h.name} {h.status}" for h in live[:6])
                                                   + (", …" if len(live) > 6 else "") + ")" if live else "")]
        if self.scheduler is not None and (jobs := len(self.scheduler.jobs())):
            parts.append(plural(jobs, "scheduled job"))
        if self._started and (watches := len(self.watches.all())):
            parts.append(plural(watches, "watch", "watches"))
        return ", ".join(parts)

    def leaving(self) -> str:
        """What stopping this process leaves, for its last line: saved pipelines start again with the next run."""
        live = [h for h in self.pipelines.snapshot() if h.status in LIVE] if self._started else []
        if not live:
            return ""
        if self.background:
            return f"{plural(len(live), 'pipeline')} saved: {'it starts' if len(live) == 1 else 'they start'} again " \
                   "with the next run"
        return f"{plural(len(live), 'pipeline')} stopped with it (not saved)"

    # shutdown -----------------------------------------------------------
    async def close(self) -> None:
        """Stop the scheduler, then pipelines' threads (they stay in active_state.json for the next start)."""
        await self.local_api.stop()  # first: nothing typed beside it reaches a process that is going
        restoring, self.restoring = self.restoring, None
        if restoring is not None:
            await restoring.cancel()  # a camera still backing off must not hold the shutdown
        if self._started and hasattr(self, "watches"):
            self.watches.close()  # timers off; the watches stay stored for the next start
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            # stop() joins the scheduler thread, which may be waiting on this loop: never block the loop on it
            await asyncio.to_thread(scheduler.stop)
        if self.services.pipelines is not None:
            await self.services.pipelines.close()
        await self.backend.close()  # idempotent: the pipeline manager may have closed it already
        webhooks, self.webhooks = self.webhooks, None
        if webhooks is not None:
            await webhooks.close()
        if self._started and hasattr(self, "llm"):
            await self.llm.aclose()  # the SDK's HTTP connection pool
        self.owner.release()  # last: a standby takes over only once this process has stopped everything
        self._started = False
