"""/vision: the shared command core (bot.commands.dispatch), answered ephemerally within Slack's 3 seconds."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.commands.dispatch import CommandContext, CommandReply, run_command
from handlers.alerts.digest_blocks import digest_blocks, digest_fallback, message_links
from handlers.answers.moments_blocks import moments_message
from handlers.answers.render import upload_frame
from handlers.context import SlackBot
from handlers.transport.mrkdwn import escape
from handlers.transport.tables import table_block

FALLBACK_MAX = 3000  # a message with blocks: its text is the notification's, and a screen reader's

log = logging.getLogger(__name__)

ACK_BUDGET = 2.0  # seconds we wait for the command before acking with "working on it" (Slack allows 3)


def command_context(bot: SlackBot, user_id: str | None, channel_id: str | None) -> CommandContext:
    return bot.runtime.command_context(user_id, channel_id)


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
    text = str(command.get("text") or "").strip()
    ctx = command_context(bot, command.get("user_id"), command.get("channel_id"))
    acked = False

    async def progress(line: str) -> None:  # a slow command's first line ("loading the detector…"): the ack, at once
        nonlocal acked
        if acked:
            await respond(response_type="ephemeral", replace_original=True, text=escape(line))
        else:
            acked = True
            await ack(response_type="ephemeral", text=f":hourglass_flowing_sand: {escape(line)}")

    ctx.progress = progress
    task = asyncio.ensure_future(answer(text, ctx))
    done, _ = await asyncio.wait({task}, timeout=ACK_BUDGET)
    if task in done and not acked and not _uploads(task.result()):
        reply = task.result()
        await ack(response_type="ephemeral", **await message(reply, bot))
    else:
        if not acked:
            acked = True
            await ack(response_type="ephemeral", text=f":hourglass_flowing_sand: Working on `/vision {escape(text)}`…")
        reply = await task
        await respond(response_type="ephemeral", replace_original=True, **await message(reply, bot))
    if reply.frame:
        channel = str(reply.post_channel or command.get("channel_id") or "")
        problem = await upload_frame(bot.client, channel, None, reply.frame, reply.frame_caption, name="snapshot")
        if problem:
            await respond(response_type="ephemeral", replace_original=False, text=problem)
    if reply.file:
        problem = await post_file(bot.client, str(command.get("channel_id") or ""), reply.file, reply.file_name)
        if problem:
            await respond(response_type="ephemeral", replace_original=False, text=problem)


def _uploads(reply: CommandReply) -> bool:
    """Whether the answer uploads pictures first (a search's frames): seconds Slack's ack must not wait for."""
    return reply.moments is not None and bool(reply.moments.pictures())


async def message(reply: CommandReply, bot: SlackBot) -> dict[str, Any]:
    """The reply's text; a digest also as its table and chart blocks (alerts linked to their messages), a search as
    its table and frames, the text kept as their fallback."""
    if reply.table:  # `/vision cameras`: the rows as one table, the text its fallback
        head = {"type": "section", "text": {"type": "mrkdwn", "text": escape(reply.text.split("\n", 1)[0])[:3000]}}
        return {"text": escape(reply.text)[:FALLBACK_MAX], "blocks": [head, table_block(reply.table)]}
    tz = bot.settings.heartbeat.timezone
    if reply.moments is not None:  # a search: its table and best frames (uploaded unshared), the text as fallback
        return await moments_message(bot.client, reply.moments, tz, bot.posted_alerts)
    if reply.digest is None:
        return {"text": escape(reply.text)}
    posts = await message_links(bot.client, bot.posted_alerts, reply.digest)
    return {"text": digest_fallback(reply.digest, tz), "blocks": digest_blocks(reply.digest, tz, posts)}


async def post_file(client: Any, channel: str, data: bytes, name: str) -> str | None:
    """Post a command's file (an exported recipe script) to the channel; None, or why it could not."""
    try:
        await client.files_upload_v2(channel=channel, file=data, filename=name, title=name)
        return None
    except SlackApiError as exc:
        err = exc.response.get("error", "error")
        log.warning("file upload to %s failed: %s", channel, err)
        return f"I could not post {name} here ({err}); it is saved in the bot's workspace under exports/."


def register(app: Any, bot: SlackBot) -> None:
    app.command("/vision")(handle_vision)
