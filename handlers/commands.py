"""/vision: the shared command core (bot.commands), answered ephemerally within Slack's 3 seconds."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.commands import CommandContext, CommandReply, run_command
from handlers.context import SlackBot
from handlers.mrkdwn import escape
from handlers.render import upload_frame

log = logging.getLogger(__name__)

ACK_BUDGET = 2.0  # seconds we wait for the command before acking with "working on it" (Slack allows 3)


def command_context(bot: SlackBot, user_id: str | None, channel_id: str | None) -> CommandContext:
    rt = bot.runtime
    return CommandContext(settings=rt.settings, pipelines=getattr(rt, "pipelines", None),
                          router=getattr(rt, "router", None), workspace=getattr(rt, "workspace", None),
                          user_id=user_id, channel_id=channel_id, monitor=getattr(rt, "monitor", None),
                          scheduler=getattr(rt, "scheduler", None))


async def answer(text: str, ctx: CommandContext) -> CommandReply:
    """run_command, with a last-resort line if it ever raises."""
    try:
        return await run_command(text, ctx)
    except Exception as exc:  # run_command promises not to raise; if it does, the user still gets a line
        log.exception("/vision %s failed", text)
        return CommandReply(f"`/vision {text}` failed ({type(exc).__name__}); check the bot's logs.", ok=False)


async def handle_vision(ack: Any, command: dict[str, Any], respond: Any, context: Any) -> None:
    """Ack with the answer when it is ready in time, else ack "working" and answer via response_url."""
    bot: SlackBot = context["vision"]
    text = (command.get("text") or "").strip()
    ctx = command_context(bot, command.get("user_id"), command.get("channel_id"))
    task = asyncio.ensure_future(answer(text, ctx))
    done, _ = await asyncio.wait({task}, timeout=ACK_BUDGET)
    if task in done:
        reply = task.result()
        await ack(response_type="ephemeral", text=escape(reply.text))
    else:
        await ack(response_type="ephemeral", text=f":hourglass_flowing_sand: Working on `/vision {escape(text)}`…")
        reply = await task
        await respond(response_type="ephemeral", replace_original=True, text=escape(reply.text))
    if reply.frame:
        channel = reply.post_channel or command.get("channel_id")
        problem = await upload_frame(bot.client, channel, None, reply.frame, reply.frame_caption, name="snapshot")
        if problem:
            await respond(response_type="ephemeral", replace_original=False, text=problem)


def register(app: Any, bot: SlackBot) -> None:
    app.command("/vision")(handle_vision)
