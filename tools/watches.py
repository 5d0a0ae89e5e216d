"""watch_for: a one-shot watch on a running camera that tells the asker in this conversation, then ends."""

from __future__ import annotations

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolContext, ToolResult
from bot.commands.context import CommandContext
from bot.commands.watches import create_watch
from bot.monitoring.watch import span
from bot.objects.watch import WatchSpec


async def watch_for(args: WatchSpec, ctx: ToolContext) -> ToolResult:
    who = ctx.requester
    cmd = CommandContext(ctx.settings, ctx.services, who.user_id, who.channel_id, ctx.session_key or None,
                         operator=who.operator)
    try:
        watch, note = create_watch(args, cmd)  # the one watch creation, as /vision watch and REST
    except (ValueError, LookupError) as exc:
        return ToolResult.error(str(exc))
    where = "in this conversation" if watch.thread_ts else "in the camera's alert channel" if not watch.channel \
        else "in this channel"
    return ToolResult(f"Watch {watch.id} set on {watch.camera} for {span(watch.expires_at - watch.created_at)}: "
                      f"the person is told {where} once {watch.condition.describe()}, then it ends.{note} "
                      f"It is cancelled with `/vision unwatch {watch.id}`.")


def register(reg: ToolRegistry) -> None:
    reg.register_operation("watch_for", watch_for)
