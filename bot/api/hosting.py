"""What the API needs from the process it runs in: the one Settings and the typed Services (the Runtime has both)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aiohttp import web

if TYPE_CHECKING:
    from bot.agent.registry import ToolRegistry
    from bot.config import Settings
    from bot.scheduling.scheduler import Scheduler
    from bot.services import Services


class ApiHost(Protocol):
    """What the API reads on every request (the Runtime is one): settings, the services, the scheduler if it runs, and
    the tools (POST /api/inference runs the model's run_inference)."""

    settings: Settings
    services: Services
    scheduler: Scheduler | None
    tools: ToolRegistry


HOST_KEY: web.AppKey[ApiHost] = web.AppKey("vision_agent_api_host")
