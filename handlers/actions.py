"""Alert buttons: "Stop pipeline" (through the /vision core) and "Mute 1 h" (the alert router)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from handlers.alerts import MUTE_ACTION, MUTE_SECONDS, STOP_ACTION
from handlers.commands import answer, command_context
from handlers.context import SlackBot
from handlers.mrkdwn import escape

log = logging.getLogger(__name__)


def _where(body: dict[str, Any]) -> tuple[str, str]:
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id", "")
    return channel, container.get("message_ts") or (body.get("message") or {}).get("ts", "")


def _value(action: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(action.get("value") or "{}")
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


def refusal(bot: SlackBot, user: str, channel: str) -> str | None:
    """Alert controls follow the same allowlists as pipeline control (empty = everyone)."""
    slack = bot.settings.slack
    if slack.allowed_users and user not in slack.allowed_users:
        return "Only " + ", ".join(f"<@{u}>" for u in slack.allowed_users) + " may control alerts; ask one of them."
    if slack.allowed_channels and channel not in slack.allowed_channels:
        return "Alerts can only be controlled from " + ", ".join(f"<#{c}>" for c in slack.allowed_channels) + "."
    return None


async def handle_mute(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, context: Any) -> None:
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, ts) = body["user"]["id"], _where(body)
    camera = _value(action).get("camera")
    router = getattr(bot.runtime, "router", None)
    if not camera or router is None:
        await respond(response_type="ephemeral", replace_original=False, text="This alert has no camera to mute.")
        return
    if why := refusal(bot, user, channel):
        await respond(response_type="ephemeral", replace_original=False, text=why)
        return
    until = router.mute(camera, MUTE_SECONDS)
    when = time.strftime("%H:%M UTC", time.gmtime(until))
    await bot.client.chat_postMessage(channel=channel, thread_ts=ts or None,
                                      text=f":no_bell: <@{user}> muted alerts from *{escape(camera)}* until {when}.")


async def handle_stop(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, context: Any) -> None:
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, ts) = body["user"]["id"], _where(body)
    pipeline = _value(action).get("pipeline")
    if not pipeline:
        await respond(response_type="ephemeral", replace_original=False, text="This alert has no pipeline to stop.")
        return
    reply = await answer(f"stop {pipeline}", command_context(bot, user, channel))
    if not reply.ok:
        await respond(response_type="ephemeral", replace_original=False, text=escape(reply.text))
        return
    await bot.client.chat_postMessage(channel=channel, thread_ts=ts or None,
                                      text=f":octagonal_sign: <@{user}>: {escape(reply.text)}")


def register(app: Any, bot: SlackBot) -> None:
    app.action(MUTE_ACTION)(handle_mute)
    app.action(STOP_ACTION)(handle_stop)
