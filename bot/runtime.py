"""The composition root: builds every long-lived piece from Settings, in order, and shuts them down."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from workspace import Workspace

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
_OUR_PACKAGES = {"bot", "tools", "workspace", "handlers"}


class Lazy:
    """Stands in for an object built on first attribute access (the backend imports `inference`: seconds)."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._obj: Any = None

    @property
    def lazy_built(self) -> bool:
        return self._obj is not None

    def lazy_object(self) -> Any:
        """The wrapped object, built now if needed (names chosen not to shadow the object's own attributes)."""
        if self._obj is None:
            self._obj = self._factory()
        return self._obj

    def lazy_take(self) -> Any:
        """The built object (or None), forgetting it: the next use builds a fresh one."""
        obj, self._obj = self._obj, None
        return obj

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lazy_object(), name)


class Runtime:
    """settings -> workspace -> memory -> router -> pipelines -> monitor -> tools -> LLM -> sessions -> agent.

    Each piece is imported inside its builder; a piece whose module is not in this build is left as None and
    `missing[piece]` says why, so the rest (for example the `/vision` commands without an API key) still works.
    Use `async with Runtime(settings) as rt:` or `await rt.start()` ... `await rt.close()`.
    """

    def __init__(self, settings: Settings, *, background: bool = True) -> None:
        self.settings = settings
        self.background = background  # restore pipelines + run the scheduler; off for one-shot commands
        self.workspace = Workspace(settings.workspace)
        self.created: list[Path] = []  # what workspace init created on start
        self.missing: dict[str, str] = {}
        self.backend = Lazy(self._make_backend)
        self.memory: Any = None
        self.router: Any = None
        self.pipelines: Any = None
        self.monitor: Any = None
        self.scheduler: Any = None
        self.tools: Any = None
        self.llm: Any = None
        self.sessions: Any = None
        self.agent: Any = None
        self.services: dict[str, Any] = {}
        self._started = False

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
        self.created = self.workspace.init()
        self.memory = self._optional("memory", self._build_memory)
        self.router = self._build_router()
        self.pipelines = self._optional("pipelines", self._build_pipelines)
        self.monitor = self._optional("monitor", self._build_monitor)
        self.services.update(
            backend=self.backend, pipelines=self.pipelines, memory=self.memory, workspace=self.workspace,
            router=self.router, monitor=self.monitor,
        )
        self.tools = self._build_tools()
        self.llm = self._optional("llm", self._build_llm)
        self.sessions = self._optional("sessions", self._build_sessions)
        self.agent = self._optional("agent", self._build_agent) if self.llm and self.sessions else None
        if not self.background:
            return
        self.scheduler = self._optional("scheduler", self._build_scheduler)
        if self.monitor is not None:
            self.monitor.start()  # listens to pipeline results before any pipeline is restored
        if self.pipelines is not None and self.workspace.active_state_path.is_file():
            restored = await self.pipelines.restore()
            if restored:
                log.info("restored %d pipeline(s) from %s", len(restored), self.workspace.active_state_path)
        if self.scheduler is not None:
            self.scheduler.start()

    def _optional(self, piece: str, build: Callable[[], T]) -> T | None:
        """build(), or None when the module it needs is not part of this build yet."""
        try:
            return build()
        except ImportError as exc:
            if (exc.name or "").split(".")[0] not in _OUR_PACKAGES:
                raise  # a third-party dependency is missing: that is an install problem, say so loudly
            self.missing[piece] = f"{piece} is not available in this build ({exc})"
            log.info("%s", self.missing[piece])
            return None

    def _make_backend(self) -> Any:
        from bot.backends import make_backend

        return make_backend(self.settings)

    def _build_memory(self) -> Any:
        from workspace.memory import MemoryStore

        return MemoryStore(self.workspace.root, timezone=self.settings.heartbeat.timezone)

    def _build_router(self) -> Any:
        from bot.alerts import AlertRouter

        s = self.settings
        return AlertRouter(
            self.workspace.state_dir / "alerts.json",
            default_channel=s.slack.alert_channel,
            cooldown_seconds=s.monitoring.alert_cooldown_seconds,
            quiet_hours=s.monitoring.quiet_hours,
            timezone=s.heartbeat.timezone,
        )

    def _build_pipelines(self) -> Any:
        from bot.pipelines import PipelineManager

        return PipelineManager(self.backend.lazy_object, self.workspace.active_state_path, self.settings)

    def _build_monitor(self) -> Any:
        from bot.monitor import Monitor

        return Monitor(settings=self.settings, router=self.router, memory=self.memory, pipelines=self.pipelines)

    def _build_tools(self) -> Any:
        from tools import build_registry

        return build_registry()

    def _build_llm(self) -> Any:
        from bot.llm import LLMClient

        return LLMClient(self.settings, usage_path=self.workspace.state_dir / "usage.json")

    def _build_sessions(self) -> Any:
        from bot.sessions import SessionStore

        return SessionStore(self.workspace.sessions_dir)

    def _build_agent(self) -> Any:
        from bot.agent import Agent

        return Agent(
            llm=self.llm, tools=self.tools, sessions=self.sessions, settings=self.settings,
            workspace=self.workspace, services=self.services, pipelines_text=self.pipelines_text,
        )

    def _build_scheduler(self) -> Any:
        from bot.scheduler import Scheduler

        return Scheduler(
            self.settings, self.agent, self.monitor, self.workspace,
            router=self.router, pipelines=self.pipelines, memory=self.memory,
        )

    # use ----------------------------------------------------------------
    @property
    def llm_ready(self) -> bool:
        """True when free text can go to Claude (an API key is set and the agent core is built)."""
        return self.agent is not None and bool(getattr(self.llm, "available", False))

    def pipelines_text(self) -> str:
        """Running pipelines for the dynamic part of the prompt (sources are already credential-redacted)."""
        if self.pipelines is None:
            return ""
        lines = []
        for h in self.pipelines.snapshot():
            fps = f", {h.fps:.1f} fps" if h.fps else ""
            err = f", error: {h.error}" if h.error else ""
            lines.append(f"- {h.name} ({h.pipeline_id}): {h.status}{fps}, source {h.video_reference}, "
                         f"{h.workflow_description}{err}")
        return "\n".join(lines)

    def command_context(self, user_id: str | None = None, channel_id: str | None = None) -> Any:
        """The context `bot.commands.run_command` needs, from this runtime's services."""
        from bot.commands import CommandContext

        return CommandContext(
            settings=self.settings, pipelines=self.pipelines, router=self.router, workspace=self.workspace,
            user_id=user_id, channel_id=channel_id, monitor=self.monitor, scheduler=self.scheduler,
        )

    # shutdown -----------------------------------------------------------
    async def close(self) -> None:
        """Stop the scheduler, then pipelines' threads (they stay in active_state.json for the next start)."""
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            # stop() joins the scheduler thread, which may be waiting on this loop: never block the loop on it
            await _maybe_await(await asyncio.to_thread(scheduler.stop))
        if self.pipelines is not None:
            await self.pipelines.close()
        backend = self.backend.lazy_take()
        if backend is not None:  # the pipeline manager may have closed it already: close() is idempotent
            await backend.close()
        if self.llm is not None:
            await self.llm.aclose()  # the SDK's HTTP connection pool
        self._started = False


async def _maybe_await(value: Any) -> Any:
    import inspect

    return await value if inspect.isawaitable(value) else value
