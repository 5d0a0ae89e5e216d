"""`/vision cameras [NAME]`: which cameras can do their job, one row per camera of CAMERAS.md and per pipeline
(bot/pipelines/readiness.py); Slack shows the rows as a table, the terminal as lines."""

from __future__ import annotations

from bot.commands.context import CommandContext, CommandReply, fail
from bot.media.cameras import cameras, unknown_camera
from bot.pipelines.readiness import Readiness, Source, of_manager, rows, summary, table, text


async def readiness(ctx: CommandContext, only: str | None = None) -> list[Readiness]:
    """The rows for this process: its pipelines (none when it runs none) and the registered cameras."""
    registered = cameras(ctx.workspace, ctx.settings)
    mgr = ctx.services.pipelines
    if mgr is None:
        return rows(registered, Source([], lambda pid: None), lambda h: None, only)
    return await of_manager(mgr, registered, only)


async def list_cameras(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) > 1:
        return fail("Usage: `/vision cameras [CAMERA]`")
    only = tokens[0] if tokens else None
    found = await readiness(ctx, only)
    if only is not None and not found:
        names = [*cameras(ctx.workspace, ctx.settings)]
        if ctx.services.pipelines is not None:
            names += [h.name for h in ctx.services.pipelines.snapshot()]
        known = unknown_camera(only, names)
        return fail(f"No camera or pipeline called {only!r}: {known}{'' if known.endswith('?') else '.'}")
    return CommandReply(text(found), table=table(found) if found else None)


async def cameras_status(ctx: CommandContext) -> list[str]:
    """The status line about cameras: how many can count, and why the others cannot."""
    return [f"*Cameras*: {summary(await readiness(ctx))}"]
