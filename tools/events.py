"""get_events: what happened (alerts, crossings, health) from the event log, with numbers, not from memory text."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.monitoring.digest import crossing_moves
from bot.monitoring.events_log import ID_DIGITS, EventLog
from bot.monitoring.since import parse_since
from bot.services import need

MAX_SCAN = 100_000  # the whole bounded log: crossings need each pipeline's totals before `since`


class GetEventsArgs(ToolArgs):
    since: str | float | None = Field(
        None, description="From when: 'HH:MM' or 'H' (the last one, workspace timezone), an ISO time "
        "(2026-05-01T09:00), or seconds ago (a number). Default: the last 24 hours")
    camera: str | None = Field(None, description="Only this camera (pipeline name)")
    event_type: str | None = Field(
        None, description="Only this type: alert, line_crossed, class_appears, count_over, time_in_zone, near, then, "
        "health, heartbeat")
    limit: int = Field(20, ge=0, le=200, description="How many of the latest events to list after the totals")
    after: str | None = Field(
        None, pattern=r"^\d{1,18}$", description="An event id: list the events after it, oldest first, each with its "
        "id, and end with the `next` id to pass for the following page (no gaps or repeats between pages). Without "
        "it: totals, then the latest events")


async def get_events(args: GetEventsArgs, ctx: ToolContext) -> ToolResult:
    log = need(ctx.services.events, "the event log")
    tz = ctx.settings.heartbeat.timezone
    if args.after is not None:
        return _page(args, log, tz)
    try:
        start = parse_since(args.since, tz, time.time())
    except ValueError as exc:
        return ToolResult.error(str(exc))
    camera = args.camera.strip() if args.camera else None
    every = log.query(camera=camera, event_type=args.event_type, limit=MAX_SCAN)
    window = [e for e in every if _time(e) >= start]
    head = f"Events since {_clock(start, tz, full=True)}" + (f" on {camera}" if camera else "")
    if not window:
        return ToolResult(text=f"{head}: none.")
    lines = [f"{head}: {len(window)}{_held(window)}."]
    crossings = crossings_since(every, start)
    for cam, per_rule in _by_camera(window).items():
        rules = ", ".join(f"{rule} {n}" for rule, n in per_rule.most_common())
        moved = crossings.get(cam)
        lines.append(f"{cam}: {rules}" + (f"; crossings in {moved[0]} / out {moved[1]}" if moved else ""))
    if args.limit:
        shown = window[-args.limit:]
        lines.append(f"Latest {len(shown)}:" if len(shown) < len(window) else "All:")
        lines += [_line(e, tz) for e in shown]
    return ToolResult(text="\n".join(lines))


def _page(args: GetEventsArgs, log: EventLog, tz: str) -> ToolResult:
    """The events after an id, oldest first, with their ids and the cursor of the next page."""
    try:
        since = parse_since(args.since, tz, time.time()) if args.since is not None else None
    except ValueError as exc:
        return ToolResult.error(str(exc))
    camera = args.camera.strip() if args.camera else None
    events, after, more = log.page(int(args.after or 0), args.limit or 20, camera, args.event_type, since)
    cursor = str(after).zfill(ID_DIGITS)
    head = f"Events after id {args.after}" + (f" on {camera}" if camera else "") + f", oldest first: {len(events)}."
    tail = f"next: after={cursor}" + (" (more are waiting: ask again with it)" if more else " (none more yet)")
    return ToolResult(text="\n".join([head, *(f"- #{e['id']} " + _line(e, tz)[2:] for e in events), tail]))


def crossings_since(events: list[dict[str, Any]], start: float) -> dict[str, tuple[int, int]]:
    """Line crossings in/out per camera after `start`, from the counter totals in line_crossed events
    (`bot.monitoring.digest.crossing_moves`: each event adds what its pipeline's totals grew, held ones too)."""
    out: dict[str, list[int]] = {}
    for e, moved_in, moved_out in crossing_moves(events):
        if _time(e) >= start:
            moved = out.setdefault(str(e.get("camera")), [0, 0])
            moved[0], moved[1] = moved[0] + moved_in, moved[1] + moved_out
    return {cam: (m[0], m[1]) for cam, m in out.items()}


def _by_camera(events: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for e in events:
        out.setdefault(str(e.get("camera")), Counter())[str(e.get("rule") or e.get("event_type"))] += 1
    return dict(sorted(out.items()))


def _held(events: list[dict[str, Any]]) -> str:
    held = Counter(str(e["held"]) for e in events if e.get("held"))
    if not held:
        return ""
    return f" ({sum(held.values())} not posted: " + ", ".join(f"{why} {n}" for why, n in held.most_common()) + ")"


def _line(e: dict[str, Any], tz: str) -> str:
    held = f" [not posted: {e['held']}]" if e.get("held") else ""
    return f"- {_clock(_time(e), tz)} {e.get('camera')} {e.get('rule') or e.get('event_type')}: {e.get('text', '')}{held}"


def _clock(t: float, tz: str, full: bool = False) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M %Z" if full else "%m-%d %H:%M:%S")


def _time(e: dict[str, Any]) -> float:
    return _num(e.get("time"))


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def register(reg: ToolRegistry) -> None:
    reg.register(
        "get_events",
        "What happened, from the event log (every alert, line crossing, zone stay and pipeline health event, "
        "posted or held): totals per camera and rule, line crossings in/out, then the latest events. Use it for "
        "'what happened while I was away?' or 'how many people crossed the door since 9?'.",
        GetEventsArgs,
        get_events,
    )
