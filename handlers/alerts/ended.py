"""A pipeline whose video file ran out: one line with its totals where it was started (its thread, or to the person
who ran `/vision start`, as that reply was)."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from bot.pipelines.tally import Ended
from bot.rights import LOCAL_CHANNEL
from handlers.context import SlackBot
from handlers.state.threads import DM_ROOT, place_of
from handlers.transport.mrkdwn import escape

log = logging.getLogger(__name__)


async def tell_ended(bot: SlackBot, ended: Ended) -> None:
    """Post ended.line() where the start was asked; a start from elsewhere (terminal, API) is not Slack's to tell."""
    origin = ended.origin
    if origin is None:
        return
    text = escape(ended.line())
    try:
        if (place := place_of(origin.session_key or "")) is not None:  # a conversation: its thread
            channel, root = place
            await bot.client.chat_postMessage(channel=channel, thread_ts=None if root == DM_ROOT else root, text=text)
        elif origin.channel_id and origin.user_id and origin.channel_id != LOCAL_CHANNEL:  # `/vision start`
            await bot.client.chat_postEphemeral(channel=origin.channel_id, user=origin.user_id, text=text)
    except SlackApiError as exc:
        log.warning("could not tell %s that %s ended: %s", origin.channel_id, ended.handle.name,
                    exc.response.get("error"))


def register(bot: SlackBot) -> None:
    """Tell Slack of every pipeline whose file runs out (the manager calls on the event loop; the post is a task)."""
    def on_end(ended: Ended) -> None:
        bot.spawn(tell_ended(bot, ended))

    bot.runtime.pipelines.add_end_listener(on_end)
