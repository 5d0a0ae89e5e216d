"""search_events: the past searched by words and meaning (the event log's words and pictures), with its moments."""

from __future__ import annotations

import asyncio

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolContext, ToolResult
from bot.commands.search import search_events as run_search
from bot.monitoring.search.moments import moments_text
from bot.objects.search import EventSearchSpec
from bot.services import need


async def search_events(args: EventSearchSpec, ctx: ToolContext) -> ToolResult:
    log = need(ctx.services.events, "the event log")
    try:
        found = await asyncio.to_thread(run_search, args, log, ctx.settings)  # reads the log, may embed: off the loop
    except ValueError as exc:
        return ToolResult.error(str(exc))
    best = found.pictures()
    return ToolResult(text=moments_text(found, ctx.settings.heartbeat.timezone), data=found.as_data(),
                      image=best[0].picture if best else None, moments=found)


def register(reg: ToolRegistry) -> None:
    reg.register_operation("search_events", search_events)
