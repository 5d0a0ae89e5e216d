"""camera_readiness: which cameras can do their job and what to change, the rows `/vision cameras` shows."""

from __future__ import annotations

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.commands.cameras import readiness
from bot.commands.context import CommandContext
from bot.media.cameras import cameras, hide_camera_urls
from bot.media.redaction import redact
from bot.pipelines.readiness import text


class ReadinessArgs(ToolArgs):
    camera: str | None = Field(None, max_length=80, description="One camera or pipeline name (default: all of them)")


async def camera_readiness(args: ReadinessArgs, ctx: ToolContext) -> ToolResult:
    who = ctx.requester
    command = CommandContext(ctx.settings, ctx.services, user_id=who.user_id, channel_id=who.channel_id,
                             operator=who.operator)
    found = await readiness(command, args.camera.strip() if args.camera else None)
    if args.camera and not found:
        return ToolResult.error(f"No camera or pipeline called {args.camera!r}; call camera_readiness without a "
                                "camera to see them all.")
    said = text(found)
    return ToolResult(text=redact(hide_camera_urls(said, cameras(ctx.services.workspace, ctx.settings))))


def register(reg: ToolRegistry) -> None:
    reg.register(
        "camera_readiness",
        "Which cameras can do their job: every camera of CAMERAS.md and every pipeline with its resolution, fps asked "
        "and delivered, the height of the people it sees, its light (dark, grey/IR, black), motion, the age of its "
        "last frame, and whether it can count (if not, why and what to change). Use it when asked which cameras "
        "work, are fit to count, or why counts look wrong.",
        ReadinessArgs,
        camera_readiness,
    )
