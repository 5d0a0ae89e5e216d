"""watch_for: a one-shot watch on a running camera that tells the asker in this conversation, then ends."""

from __future__ import annotations

import shlex

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.commands.context import CommandContext
from bot.commands.watches import CONDITION_HELP, make_watch
from bot.monitoring.watch import MAX_SECONDS, MIN_SECONDS, span
from bot.rights import CONTROLLED


class WatchForArgs(ToolArgs):
    camera: str = Field(description="The camera or pipeline name to watch (a pipeline should run on it)")
    condition: str = Field(description=f"What to wait for, in the /vision watch words: {CONDITION_HELP}. E.g. "
                           "'appears truck', 'count person>3', 'count person<1' (nobody left), 'absent person 60' "
                           "(no person seen for 60 s), 'line' (something crosses the counting line)")
    for_minutes: float | None = Field(None, gt=0, description=f"How long to watch, in minutes (default 120; "
                                      f"{MIN_SECONDS:g} s to {MAX_SECONDS / 3600:g} h)")
    confirm: bool = Field(False, description="Look at the frame with the model before telling (fewer false alarms, "
                          "one model call per sighting)")
    about: str = Field("", max_length=200, description="What the person asked for, in their words "
                       "('a truck reaches the dock'): shown with the watch and given to the model with confirm")


async def watch_for(args: WatchForArgs, ctx: ToolContext) -> ToolResult:
    who = ctx.requester
    cmd = CommandContext(ctx.settings, ctx.services, who.user_id, who.channel_id, ctx.session_key or None,
                         operator=who.operator)
    try:
        words = shlex.split(args.condition)
        seconds = None if args.for_minutes is None else args.for_minutes * 60
        watch, note = make_watch(args.camera, words, cmd, seconds, args.confirm, args.about)
    except (ValueError, LookupError) as exc:
        return ToolResult.error(str(exc))
    where = "in this conversation" if watch.thread_ts else "in the camera's alert channel" if not watch.channel \
        else "in this channel"
    return ToolResult(f"Watch {watch.id} set on {watch.camera} for {span(watch.expires_at - watch.created_at)}: "
                      f"the person is told {where} once {watch.condition.describe()}, then it ends.{note} "
                      f"It is cancelled with `/vision unwatch {watch.id}`.")


def register(reg: ToolRegistry) -> None:
    reg.register("watch_for", "Watch a camera for something once ('tell me when a truck reaches the dock in the "
                 "next 2 hours', 'let me know when the last person leaves'): the asker is told here when it happens "
                 "or when the watch expires, and the watch ends. Needs a running pipeline on the camera.",
                 WatchForArgs, watch_for, changes=CONTROLLED)
