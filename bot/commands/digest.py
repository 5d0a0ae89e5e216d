"""`/vision digest [since] [camera=NAME]`: what happened while you were away, from the event log, in numbers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bot.agent.last_wrote import last_wrote
from bot.commands.context import CommandContext, CommandReply, parse_options
from bot.commands.rules import resolve_camera
from bot.config import Settings
from bot.monitoring.digest import Digest
from bot.monitoring.digest_log import from_log
from bot.monitoring.digest_text import digest_text
from bot.monitoring.since import SINCE_FORMS, parse_since, since_note
from bot.rights import Requester
from bot.services import Services, need

DIGEST_USAGE = ("Usage: `/vision digest [since] [camera=NAME]` — since is '2h', 'yesterday 18:00', an ISO time, or "
                "nothing for since you last wrote here")
FIRST_TIME_SECONDS = 86400.0  # someone who never wrote here gets the last day
MAX_DAYS = 90  # how far a digest looks back: the bounded event log rarely holds more; weeks per bar say little


def resolve_since(since: str | None, settings: Settings, who: Requester, now: float,
                  sessions_dir: Path | None, skip: int = 0) -> tuple[float, str]:
    """(start, a note on where it starts, '' for a time given) for a digest: `since` as `parse_since` reads it (at
    most MAX_DAYS back; 'since yesterday 23:59' noted for a clock time still ahead today), or when `who` last wrote
    here (`skip`: an agent turn leaves out the message that asked). ValueError: one line saying what to write."""
    tz = settings.heartbeat.timezone
    if since and since.strip():
        try:
            start = parse_since(since, tz, now)
        except ValueError as exc:
            raise ValueError(f"{exc} (e.g. `/vision digest 2h`)") from None
        if not now - start <= MAX_DAYS * 86400:  # also NaN and -inf (a number too long for a float)
            raise ValueError(f"A digest looks back at most {MAX_DAYS} days, not {since.strip()[:40]!r}; "
                             f"write e.g. `/vision digest 7d`.")
        return start, since_note(since, tz, start, now)
    last = last_wrote(sessions_dir, who, skip) if sessions_dir is not None else None
    if last is None:
        return now - FIRST_TIME_SECONDS, "in the last 24 h (I have no earlier message of yours here)"
    return last, "since you last wrote here"


def _camera(raw: str, ctx: CommandContext) -> str:
    """A known camera's name (any case), or one the event log has seen (a pipeline long gone); ValueError listing
    the known ones otherwise (a misspelt name must not read as "nothing happened")."""
    try:
        return resolve_camera(raw, ctx, allow_all=False)
    except ValueError as unknown:
        logged = {str(ev.get("camera")).lower(): str(ev.get("camera"))
                  for ev in (ctx.services.events.query(limit=0x7FFFFFFF) if ctx.services.events is not None else [])}
        if raw.lower() in logged:
            return logged[raw.lower()]
        raise unknown from None


def make_digest(services: Services, settings: Settings, start: float, end: float, label: str,
                camera: str | None = None) -> Digest:
    """The digest of this process's event log (ServiceUnavailable when it keeps none)."""
    log = need(services.events, "the event log")
    return from_log(log, services.router, settings, start, end, label, camera)


async def digest(tokens: list[str], ctx: CommandContext) -> CommandReply:
    """`/vision digest [since] [camera=NAME]`: the digest as text, and as a table and chart where the surface can."""
    args, opts = parse_options(tokens, {"camera"})
    now = time.time()
    ws = ctx.workspace
    try:
        start, label = await asyncio.to_thread(resolve_since, " ".join(args) or None, ctx.settings, ctx.requester,
                                               now, ws.sessions_dir if ws is not None else None)
    except ValueError as exc:
        return CommandReply(str(exc), ok=False)
    if start >= now:
        return CommandReply(f"That time is in the future; write {SINCE_FORMS}.", ok=False)
    camera = opts.get("camera") or None
    if camera is not None:
        try:
            camera = await asyncio.to_thread(_camera, camera, ctx)
        except ValueError as exc:
            return CommandReply(str(exc), ok=False)
    # off the loop (the session files above too): the log may be megabytes, and Slack's socket must not wait
    d = await asyncio.to_thread(make_digest, ctx.services, ctx.settings, start, now, label, camera)
    return CommandReply(digest_text(d, ctx.settings.heartbeat.timezone), digest=d)
