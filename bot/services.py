"""The typed, frozen services the composition root builds and tools and commands receive (never a dict by name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from bot.backends.provider import BackendProvider
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.events_log import EventLog
    from bot.monitoring.monitor import Monitor
    from bot.monitoring.scheduler import Scheduler
    from bot.pipelines.manager import PipelineManager
    from bot.recipes.service import RecipeService
    from workspace import Workspace
    from workspace.memory import MemoryStore

T = TypeVar("T")


class ServiceUnavailable(LookupError):
    """A service this process does not run; str() is a line the model or the user can act on."""


@dataclass(frozen=True)
class Services:
    """What this process runs; a field is None when it does not run that piece (e.g. no monitor in a one-shot)."""

    workspace: Workspace | None = None
    backend: BackendProvider | None = None
    pipelines: PipelineManager | None = None
    memory: MemoryStore | None = None
    router: AlertRouter | None = None
    monitor: Monitor | None = None
    scheduler: Scheduler | None = None
    recipes: RecipeService | None = None
    events: EventLog | None = None  # every alert and tier-1 event, sent or held (.state/events.jsonl)


def need(service: T | None, name: str) -> T:
    """The service, or ServiceUnavailable naming it (`need(ctx.services.pipelines, "pipelines")`)."""
    if service is None:
        raise ServiceUnavailable(f"{name} is not available in this process")
    return service
