"""Mentions, DMs and thread follow-ups → one serial session queue per thread → agent turns rendered in place."""

from __future__ import annotations

import asyncio
import html
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from handlers.context import SlackBot
from handlers.queue import Job
from handlers.render import WORKING, TurnRenderer, react
from handlers.threads import Conversation, conversation_for

log = logging.getLogger(__name__)

# Subtypes that are a person saying something; everything else (edits, deletes, joins, bot_message…) is ignored.
HUMAN_SUBTYPES = {None, "file_share", "thread_broadcast"}
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
FEEDBACK_WAIT = 2.0
EMPTY_HINT = "Hi! Ask me about a camera or a picture — attach an image or name a camera. `/vision help` lists commands."


@dataclass
class Turn:
    conv: Conversation
    text: str
    files: list[dict[str, Any]] = field(default_factory=list)
    feedback: asyncio.Task[Any] | None = None  # the "working" reaction, sent before any turn starts


def is_from_person(event: dict[str, Any], bot: SlackBot) -> bool:
    """Ignore our own posts, other bots, edits/deletes/joins and hidden events."""
    if event.get("subtype") not in HUMAN_SUBTYPES or event.get("hidden"):
        return False
    if event.get("bot_id") or event.get("bot_profile") or not event.get("user"):
        return False
    return event["user"] != bot.bot_user_id


def clean_text(text: str, bot_user_id: str) -> str:
    """What the person wrote, minus our @-mention, with Slack's link/channel markup made plain."""
    text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text or "") if bot_user_id else text or ""
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _CHANNEL.sub(lambda m: f"#{m.group(2) or m.group(1)}", text)
    return html.unescape(text).strip()


def take(bot: SlackBot, body: dict[str, Any], event: dict[str, Any], mentioned: bool) -> Turn | None:
    """Decide synchronously (no await: arrival order is kept) whether this message is ours; queue it if so."""
    bot.note_event()
    if not is_from_person(event, bot):
        return None
    conv = conversation_for(event, body.get("team_id") or event.get("team") or bot.team_id)
    mentioned = mentioned or (bool(bot.bot_user_id) and f"<@{bot.bot_user_id}" in (event.get("text") or ""))
    if not (conv.is_dm or mentioned or bot.threads.known(conv.channel, event.get("thread_ts"))):
        return None
    keys = (f"{conv.channel}:{conv.message_ts}", body.get("event_id", ""))
    if bot.dedupe.seen(*keys):  # Slack's retry, or the message.channels twin of an app_mention
        return None
    bot.dedupe.add(*keys)
    if conv.thread_ts and not conv.is_dm:
        bot.threads.remember(conv.team, conv.channel, conv.thread_ts)
    turn = Turn(conv, event.get("text") or "", list(event.get("files") or []))
    assert bot.queues is not None
    bot.queues.submit(conv.key, conv.message_ts, turn)
    return turn


def _acknowledge(bot: SlackBot, turn: Turn | None, client: Any) -> None:
    if turn is not None:  # feedback at once, even when the thread is still busy with an earlier message
        turn.feedback = bot.spawn(react(client, turn.conv.channel, turn.conv.message_ts, add=WORKING))
        bot.feedback.add(turn.feedback)
        turn.feedback.add_done_callback(bot.feedback.discard)


async def handle_mention(body: dict[str, Any], event: dict[str, Any], client: Any, context: Any) -> None:
    """app_mention: answered in the thread rooted at the mention."""
    _acknowledge(context["vision"], take(context["vision"], body, event, mentioned=True), client)


async def handle_message(body: dict[str, Any], event: dict[str, Any], client: Any, context: Any) -> None:
    """message.im / .channels / .groups: DMs, follow-ups in our threads, and mentions arriving this way first."""
    _acknowledge(context["vision"], take(context["vision"], body, event, mentioned=False), client)


async def run_turn(bot: SlackBot, job: Job) -> None:
    """The queue worker: fetch images, run the agent, render its events, set the final reaction."""
    turn: Turn = job.payload
    r = TurnRenderer(bot.client, turn.conv, bot.status_supported)
    bot.stats.turns += 1
    if bot.feedback:
        # Building a prompt holds the event loop for tens of ms; let every pending "working" reaction leave
        # first, so people see within a moment that we are on it however many threads start at once.
        await asyncio.wait(set(bot.feedback), timeout=FEEDBACK_WAIT)
    try:
        await r.status("is thinking…")
        await _converse(bot, turn, r)
    except Exception as exc:  # the agent or Slack broke mid-turn: say so in the thread, never silently
        log.exception("turn in %s failed", turn.conv.key)
        bot.stats.turn_errors += 1
        try:
            await r.error(f"Something went wrong on my side ({type(exc).__name__}); try again in a moment.")
        except Exception:
            log.exception("could not report the failure in %s", turn.conv.key)
    finally:
        await r.finish()


async def _converse(bot: SlackBot, turn: Turn, r: TurnRenderer) -> None:
    attachments = []
    if turn.files:
        fetched = await bot.fetcher.fetch_all(turn.files, bot.client)
        attachments = fetched.attachments
        for line in fetched.refusals:
            await r.note(line)
    text = clean_text(turn.text, bot.bot_user_id)
    if not text and not attachments:
        if not turn.files:
            await r.reply(EMPTY_HINT)
        return
    why_not = bot.llm_unavailable()
    if why_not:
        await r.error(f"I can't chat right now: {why_not}. `/vision` commands still work.")
        return
    async for ev in bot.agent.process_message(turn.conv.key, text, attachments):
        await r.handle(ev)


def register(app: Any, bot: SlackBot) -> None:
    app.event("app_mention")(handle_mention)
    app.event("message")(handle_message)
