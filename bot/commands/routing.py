"""`/vision route` and the alert part of `/vision status`: where alerts go, and what is muted."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.media.cameras import cameras

_CHANNEL_REF = re.compile(r"^<#(?P<id>[A-Z0-9]+)(?:\|[^>]*)?>$")


def _channel(raw: str) -> str:
    m = _CHANNEL_REF.match(raw)
    return m["id"] if m else raw


async def route(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"camera"})
    if len(args) != 1:
        return fail("Usage: `/vision route CHANNEL [camera=NAME]`")
    if ctx.services.router is None:
        return fail("Alert routing is not available in this process.")
    channel, camera = _channel(args[0]), opts.get("camera")
    ctx.services.router.set_route(channel, camera)
    return CommandReply(f"Alerts {'from *' + camera + '*' if camera else 'from all cameras'} now go to {args[0]}.")


def _clock(ts: float) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(ts))


def routes_status(ctx: CommandContext, pipeline_names: Iterable[str]) -> list[str]:
    """The status lines about alert routes and mutes (none when this process routes no alerts)."""
    if ctx.services.router is None:
        return []
    routes = ctx.services.router.routes()
    default = ctx.services.router.default_channel
    lines = ["*Alert routes*: " + (", ".join(f"{cam} → {ch}" for cam, ch in sorted(routes.items()))
                                   or f"none (default channel: {default or 'not set'})")]
    names = set(cameras(ctx.workspace, ctx.settings)) | set(pipeline_names) | set(routes) | {"*"}
    muted = [(n, ctx.services.router.muted_until(n)) for n in sorted(names)]
    lines.append("*Muted*: " + (", ".join(f"{n} until {_clock(u)}" for n, u in muted if u) or "nothing"))
    return lines
