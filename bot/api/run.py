"""`vision-agent api`: the REST API (and the webhooks, monitor and scheduler) without Slack, until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from bot.api.server import OFF, ApiServer
from bot.process import Lifetime
from bot.runtime import Runtime

if TYPE_CHECKING:
    from bot.config import Settings

PREFIX = "vision-agent api"


async def serve_api(settings: Settings, host: str, port: int, stop: asyncio.Event | None = None) -> int:
    """Run a full runtime (pipelines restored, rules, webhooks) behind the API until `stop` is set or a signal comes
    (then the last line, bot/process.py)."""
    stop = stop or asyncio.Event()
    lifetime = Lifetime(PREFIX)
    lifetime.install(stop.set)
    async with Runtime(settings) as rt:
        lifetime.holds = rt.leaving
        server = ApiServer(rt, host, port)
        bound = await server.start()
        lifetime.say(f"REST API on http://{host}:{bound}/api (OpenAPI: /openapi.json); {rt.holding()}. "
                     "Ctrl-C stops it.")
        try:
            await stop.wait()
        finally:
            await server.stop()
    return lifetime.finish(0)


def run_api(settings: Settings, host: str | None, port: int | None) -> int:
    """Entry point of `vision-agent api`: exit 2 with one line when the API cannot be served."""
    if settings.api.token is None:
        print(f"{PREFIX}: {OFF}.", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve_api(settings, host or settings.api.host, port if port is not None else
                              settings.api.port or 8081))
    except OSError as exc:  # the port is taken or the address is not ours
        print(f"{PREFIX}: cannot listen ({exc.strerror or exc}); pick another --port or --host.", file=sys.stderr)
        return 1
