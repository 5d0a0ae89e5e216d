"""Memory tools: remember (daily log / KNOWLEDGE.md) and recall (search over memory)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import Field

from bot.agent.quoting import quote_data
from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.monitoring.timeline import digest
from bot.objects.caps import cap_refusal
from bot.objects.note import NoteSpec
from bot.objects.owner import Owner
from bot.rights import audience
from bot.services import need

if TYPE_CHECKING:
    from workspace.memory import MemoryStore


class RecallArgs(ToolArgs):
    query: str = Field(min_length=1, description="What to look for")
    max_results: int = Field(5, ge=1, le=20)
    day: str | None = Field(
        None, description="'today', 'yesterday' or YYYY-MM-DD: instead of searching, that day's observation timeline "
        "(counts, line crossings, stays in zones, alerts) per camera, with the day's numbers")
    camera: str | None = Field(None, description="With day: only this camera")


MAX_DAY_LINES = 60  # per camera: the numbers above them cover the whole day


async def remember(args: NoteSpec, ctx: ToolContext) -> ToolResult:
    memory = need(ctx.services.memory, "memory")
    owner = Owner.of(ctx.requester)
    if why := cap_refusal(ctx.settings, "note", memory.written_today(), owner.user):
        return ToolResult.error(why)
    # The note keeps where it came from and who wrote it: a DM's note never comes back to someone else.
    path = memory.store(args.content, args.category, camera_id=args.camera, audience=audience(ctx.requester),
                        author=owner.user)
    return ToolResult(text=f"Saved to {path.name}.")


async def recall(args: RecallArgs, ctx: ToolContext) -> ToolResult:
    memory = need(ctx.services.memory, "memory")
    viewer = audience(ctx.requester)  # only what the asker's current place may see
    if args.day is not None:
        return _day(memory, args.day, args.camera, viewer)
    hits = memory.search(args.query, max_results=args.max_results, viewer=viewer)
    if not hits:
        return ToolResult(text=f"Nothing in memory matches {args.query!r}.")
    lines = [f"- [{h.source}] {h.text.strip()}" for h in hits]
    # Notes hold what people and cameras once said (anyone may have steered one): quoted as data, never followed.
    return ToolResult(text=quote_data("memory notes", "\n".join(lines)))


def _day(memory: MemoryStore, day: str, camera: str | None, viewer: str) -> ToolResult:
    """A day's timeline: per camera its numbers (digest) and its latest lines."""
    when = {"today": memory.now(), "yesterday": memory.now() - timedelta(days=1)}.get(day.strip().lower())
    date = when.strftime("%Y-%m-%d") if when else day.strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        return ToolResult.error(f"day takes 'today', 'yesterday' or YYYY-MM-DD, not {day!r}.")
    by_camera = memory.observations_by_camera(date, viewer=viewer)
    if camera is not None:
        by_camera = {c: b for c, b in by_camera.items() if c.lower() == camera.strip().lower()}
    if not by_camera:
        where = f" for {camera}" if camera else ""
        return ToolResult(text=f"No observations{where} on {date}.")
    out: list[str] = []
    for cam, bullets in sorted(by_camera.items()):
        out.append(f"{cam}: {digest(bullets)}")
        earlier = len(bullets) - MAX_DAY_LINES
        out += ([f"  ({earlier} earlier lines)"] if earlier > 0 else []) + [f"- {b}" for b in bullets[-MAX_DAY_LINES:]]
    return ToolResult(text=f"Observations on {date}:\n" + quote_data("memory notes", "\n".join(out)))


def register(reg: ToolRegistry) -> None:
    # MEMORY (bot/objects/table.py): shared by every person and the heartbeat, a stranger's note would steer them all
    reg.register_operation("remember", remember)
    reg.register(
        "recall",
        "Search memory for past observations, knowledge or preferences relevant to a query. For 'what happened "
        "(on CAMERA) today/yesterday/on a date', set day (and camera): the day's timeline with its numbers.",
        RecallArgs,
        recall,
    )
