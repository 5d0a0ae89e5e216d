"""get_digest: what happened while the asker was away (since a time or their last message here), from the event log."""

from __future__ import annotations

import asyncio
import time

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.commands.digest import make_digest, resolve_since
from bot.monitoring.digest_text import digest_text


class GetDigestArgs(ToolArgs):
    since: str | None = Field(
        None, description="From when: '2h', '90m', '1d' ago, 'HH:MM' (the last one; yesterday's if still "
        "ahead), 'yesterday 18:00', or an ISO time; at most 90 days back. "
        "Leave it out for 'since I last wrote here' (the asker's previous message in this channel)")
    camera: str | None = Field(None, description="Only this camera (pipeline name)")


async def get_digest(args: GetDigestArgs, ctx: ToolContext) -> ToolResult:
    now = time.time()
    ws = ctx.workspace
    sessions = ws.sessions_dir if ws is not None else None
    # The message that asked is the asker's newest here: "since I last wrote" means the one before it.
    try:
        start, label = await asyncio.to_thread(resolve_since, args.since, ctx.settings, ctx.requester, now, sessions,
                                               1)  # the files are read off the loop
    except ValueError as exc:
        return ToolResult.error(str(exc))
    camera = args.camera.strip() if args.camera else None
    d = await asyncio.to_thread(make_digest, ctx.services, ctx.settings, start, now, label, camera)  # off the loop
    return ToolResult(text=digest_text(d, ctx.settings.heartbeat.timezone))


def register(reg: ToolRegistry) -> None:
    reg.register(
        "get_digest",
        "A digest of what happened while the asker was away, from the event log (never from memory): per camera "
        "alerts posted and held, false alarms, line crossings in/out, health events; counts over time; the alerts "
        "with their frame and clip links. Use it for 'what happened while I was away?' or 'what did I miss?'.",
        GetDigestArgs,
        get_digest,
    )
