"""The HTTP servers `serve` hosts beside the Slack socket, as configured: /healthz, the REST API, MCP."""

from __future__ import annotations

import contextlib

from bot.api.server import ApiServer
from bot.config import Settings
from bot.runtime import Runtime
from handlers.context import SlackBot
from handlers.hosting.health import HealthServer


async def host_servers(stack: contextlib.AsyncExitStack, bot: SlackBot, runtime: Runtime, settings: Settings) -> None:
    """Start /healthz, the REST API and the MCP server as configured; `stack` stops them in reverse order."""
    if settings.slack.health_port is not None:  # the REST API shares it unless api.port gives it its own
        health = HealthServer(bot, settings.slack.health_port, settings.slack.health_host,
                              api=runtime if settings.api.port is None else None)
        await health.start()
        stack.push_async_callback(health.stop)
    if settings.api.port is not None:
        api = ApiServer(runtime, settings.api.host, settings.api.port)
        await api.start()
        stack.push_async_callback(api.stop)
    if settings.mcp.serve_port is not None:  # MCP clients share this runtime's pipelines, rules and events
        from bot.mcp.serve import McpHttpServer  # the mcp SDK and uvicorn: only when MCP is asked for

        mcp = McpHttpServer(runtime, settings.mcp.host, settings.mcp.serve_port)
        await mcp.start()
        stack.push_async_callback(mcp.stop)
