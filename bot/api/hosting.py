"""What the API needs from the process it runs in: the one Settings and the typed Services (the Runtime has both)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aiohttp import web

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.services import Services


class ApiHost(Protocol):
    """Read on every request: the runtime replaces `services` once the scheduler is built."""

    settings: Settings
    services: Services


HOST_KEY: web.AppKey[ApiHost] = web.AppKey("vision_agent_api_host")
