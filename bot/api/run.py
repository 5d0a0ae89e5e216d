"""`vision-agent api`: the REST API (and the webhooks, monitor and scheduler) without Slack, until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

from bot.api.server import OFF, ApiServer
from bot.runtime import Runtime

if TYPE_CHECKING:
    from bot.config import Settings


async def serve_api(settings: Settings, host: str, port: int, stop: asyncio.Event | None = None) -> None:
    """Run a full runtime (pipelines restored, rules, webhooks) behind the API until `stop` is set."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with Runtime(settings) as rt:
        server = ApiServer(rt, host, port)
        bound = await server.start()
        print(f"REST API on http://{host}:{bound}/api (OpenAPI: /openapi.json); Ctrl-C stops it.", file=sys.stderr)
        try:
            await stop.wait()
        finally:
            await server.stop()


def run_api(settings: Settings, host: str | None, port: int | None) -> int:
    """Entry point of `vision-agent api`: exit 2 with one line when the API cannot be served."""
    if settings.api.token is None:
        print(f"vision-agent api: {OFF}.", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve_api(settings, host or settings.api.host, port if port is not None else
                              settings.api.port or 8081))
    except OSError as exc:  # the port is taken or the address is not ours
        print(f"vision-agent api: cannot listen ({exc.strerror or exc}); pick another --port or --host.",
              file=sys.stderr)
        return 1
    return 0
