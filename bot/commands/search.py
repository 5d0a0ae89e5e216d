"""`/vision search WORDS [since=…] [until=…] [camera=NAME] [limit=N]`, and the one search of the past every door
runs (the search_events tool and so MCP, REST): the spec's words over the event log's index, its time and camera
read as every event reader reads them."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from bot.commands.context import CommandContext, CommandReply
from bot.commands.context import parse_options as options
from bot.monitoring.search.index import index_of
from bot.monitoring.search.moments import Moments, build, moments_text
from bot.monitoring.since import SINCE_FORMS, parse_since
from bot.monitoring.webhooks.sender import api_base
from bot.objects.refusal import Refused, parse
from bot.objects.search import EventSearchSpec
from bot.services import need

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.monitoring.events_log import EventLog

SEARCH_USAGE = ("Usage: `/vision search WORDS [since=2h] [until=HH:MM] [camera=NAME] [limit=N]` — e.g. "
                "`/vision search white van since=yesterday`, `/vision search someone walking left camera=door`")



def search_events(spec: EventSearchSpec, log: EventLog, settings: Settings, now: float | None = None) -> Moments:
    """The moments that match; ValueError with one line saying what to write (a time it cannot read, a camera the
    log never saw). Blocking (reads the log, may embed): call it off the event loop."""
    now = time.time() if now is None else now
    tz = settings.heartbeat.timezone
    since = _time(spec.since, "since", tz, now)
    until = _time(spec.until, "until", tz, now)
    if since is not None and until is not None and since >= until:
        raise ValueError("`since` is not before `until`: give the earlier time first.")
    index = index_of(log)
    camera = _camera(spec.camera, index.cameras()) if spec.camera else None
    found = index.search(spec.query, spec.limit, since, until, camera)
    return build(spec.query, _scope(camera, since, until, tz), found, index.count(since, until, camera),
                 log.pictures, api_base(settings), tz)


def _time(raw: str | None, what: str, tz: str, now: float) -> float | None:
    if raw is None or not raw.strip():
        return None
    try:
        return parse_since(raw, tz, now)
    except ValueError:
        raise ValueError(f"I cannot read {what}={raw.strip()[:40]!r} as a time; write {SINCE_FORMS}.") from None


def _camera(raw: str, known: list[str]) -> str:
    for name in known:
        if name.lower() == raw.strip().lower():
            return name
    listed = ", ".join(known[:20]) or "none yet"
    raise ValueError(f"The event log has no events from camera {raw.strip()[:60]!r}; its cameras: {listed}.")


def _scope(camera: str | None, since: float | None, until: float | None, tz: str) -> str:
    def at(t: float) -> str:
        return datetime.fromtimestamp(t, ZoneInfo(tz)).strftime("%d %b %H:%M")

    parts = [f"on {camera}"] if camera else []
    parts += [f"since {at(since)}"] if since is not None else []
    parts += [f"until {at(until)}"] if until is not None else []
    return " ".join(parts)


async def search(tokens: list[str], ctx: CommandContext) -> CommandReply:
    """The moments that match, as text; Slack and the terminal add the table and the best frames."""
    try:
        words, opts = options(tokens, {"since", "until", "camera", "limit"})
    except ValueError as exc:
        return CommandReply(f"{exc}. {SEARCH_USAGE}", ok=False)
    if not words:
        return CommandReply(SEARCH_USAGE, ok=False)
    try:
        spec = parse(EventSearchSpec, {"query": " ".join(words), **opts})
    except Refused as exc:
        return CommandReply(str(exc), ok=False)
    log = need(ctx.services.events, "the event log")
    try:
        found = await asyncio.to_thread(search_events, spec, log, ctx.settings)  # the log may be large: off the loop
    except ValueError as exc:
        return CommandReply(str(exc), ok=False)
    return CommandReply(moments_text(found, ctx.settings.heartbeat.timezone), moments=found)
