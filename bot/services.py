"""The typed, frozen services the composition root builds and tools and commands receive (never a dict by name)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from bot.backends.provider import BackendProvider
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.events_log import EventLog
    from bot.monitoring.monitor import Monitor
    from bot.monitoring.watches import WatchBook
    from bot.pipelines.manager import PipelineManager
    from bot.rights import Requester
    from workspace import Workspace
    from workspace.memory import MemoryStore

T = TypeVar("T")


class ServiceUnavailable(LookupError):
    """A service this process does not run; str() is a line the model or the user can act on."""


class Recipes(Protocol):
    """What tools and commands ask of the recipes (`bot.recipes.service.RecipeService`).

    A Protocol because recipes sit above the agent (they replay through its tool registry) while these services sit
    below it: naming the class here would be an import cycle.
    """

    def save(self, name: str, description: str, session_key: str | None, who: Requester,
             current: Sequence[Any] | None = None) -> str: ...

    async def run(self, name: str, raw: dict[str, str], who: Requester, services: Services,
                  session_key: str = "") -> tuple[bool, str]: ...

    def export(self, name: str, who: Requester | None = None) -> Path: ...

    def lines(self, who: Requester | None = None) -> list[str]: ...

    def delete(self, name: str, who: Requester) -> bool: ...


class JobsSlot:
    """Where the scheduler will be: it sits above the agent (it drives heartbeats through it), so it is built after
    the services the agent carries; the composition root puts it here once it exists, and the schedule_job tool finds
    it here (None: this process schedules nothing, e.g. a one-shot command)."""

    def __init__(self) -> None:
        self.scheduler: Any = None  # bot.scheduling.scheduler.Scheduler; Any: naming it here would be an import cycle


@dataclass(frozen=True)
class Services:
    """What this process runs; a field is None when it does not run that piece (e.g. no monitor in a one-shot).

    Built once, before the agent that carries it to every tool: what drives the agent (the scheduler) is not here.
    """

    workspace: Workspace | None = None
    backend: BackendProvider | None = None
    pipelines: PipelineManager | None = None
    memory: MemoryStore | None = None
    router: AlertRouter | None = None
    monitor: Monitor | None = None
    recipes: Recipes | None = None
    events: EventLog | None = None  # every alert and tier-1 event, sent or held (.state/events.jsonl)
    watches: WatchBook | None = None  # one-shot watch tasks (.state/watches.json)
    jobs: JobsSlot = field(default_factory=JobsSlot)  # the scheduler, once the composition root built it


def need(service: T | None, name: str) -> T:
    """The service, or ServiceUnavailable naming it (`need(ctx.services.pipelines, "pipelines")`)."""
    if service is None:
        raise ServiceUnavailable(f"{name} is not available in this process")
    return service
