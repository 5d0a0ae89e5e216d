"""GET /healthz on a local port: socket connected?, pipelines running, last heartbeat (200 healthy, 503 not)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot.api.hosting import ApiHost
from bot.api.limits import GuardedSite
from bot.api.server import mount
from bot.backends.base import LIVE
from handlers.context import SlackBot

if TYPE_CHECKING:
    from bot.runtime import Runtime

log = logging.getLogger(__name__)


def _iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds") if ts else None


async def socket_connected(bot: SlackBot) -> bool:
    client = bot.socket
    if client is None:
        return False
    try:
        return bool(await client.is_connected())
    except Exception:
        return False


def pipelines_running(runtime: Runtime) -> int:
    """Counted from the manager's last-known handles: never builds the (slow) backend for a health probe."""
    mgr = runtime.services.pipelines
    if mgr is None:
        return 0
    try:
        return sum(1 for h in mgr.snapshot() if h.status in LIVE)
    except Exception:
        return 0


def last_heartbeat(runtime: Runtime, socket: Any) -> tuple[float | None, str]:
    """The scheduler's last heartbeat run if it records one, else the socket's last ping/pong with Slack."""
    if runtime.scheduler is not None and runtime.scheduler.heartbeat.last_run is not None:
        return runtime.scheduler.heartbeat.last_run, "scheduler"
    pong = getattr(socket, "last_ping_pong_time", None)  # the aiohttp socket-mode client's, once it has pinged
    return (float(pong) if pong else None), "socket"


async def report(bot: SlackBot) -> tuple[int, dict[str, Any]]:
    connected = await socket_connected(bot)
    beat, source = last_heartbeat(bot.runtime, bot.socket)
    body = {
        "status": "ok" if connected else "disconnected",
        "socket": connected,
        "pipelines": pipelines_running(bot.runtime),
        "last_heartbeat": _iso(beat),
        "heartbeat_source": source,
        "sessions_busy": bot.queues.busy_sessions if bot.queues else 0,
        "events": bot.stats.events,
        "last_event": _iso(bot.stats.last_event),
        "time": _iso(time.time()),
    }
    return (200 if connected else 503), body


class HealthServer:
    """A tiny aiohttp server bound to 127.0.0.1 by default (containers: host='0.0.0.0').

    With `api` (the runtime), the REST API (bot/api) shares it: /api/... behind its bearer token, /openapi.json.
    """

    def __init__(self, bot: SlackBot, port: int, host: str = "127.0.0.1", api: ApiHost | None = None) -> None:
        self.bot, self.port, self.host, self.api = bot, port, host, api
        self._site = GuardedSite()

    async def start(self) -> int:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        if self.api is not None:
            mount(app, self.api)
        limits = self.bot.settings.servers  # slow or half-sent requests cannot hold it (bot/api/limits.py)
        self.port = await self._site.open(app, self.host, self.port, limits)
        log.info("health endpoint on http://%s:%d/healthz", self.host, self.port)
        return self.port

    async def _healthz(self, request: web.Request) -> web.Response:
        status, body = await report(self.bot)
        return web.json_response(body, status=status)

    async def stop(self) -> None:
        await self._site.close()
