"""Buttons: on alerts "Stop pipeline", "Mute 1 h", "False alarm"; on answers 👍/👎; on a running turn "Stop"."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.monitoring.false_alarms import FalseAlarm, FalseAlarms
from bot.objects.owner import Owner, change_refusal
from bot.rights import CONTROLLED, Requester, refusal
from handlers.alerts.sink import FALSE_ALARM_ACTION, MUTE_ACTION, MUTE_SECONDS, STOP_ACTION, SlackAlertSink
from handlers.answers.feedback import FEEDBACK_ACTION, GOOD, STOP_TURN_ACTION
from handlers.context import SlackBot
from handlers.listeners.commands import answer, command_context
from handlers.state.threads import DM_ROOT, session_key
from handlers.transport.mrkdwn import escape

log = logging.getLogger(__name__)


def _part(body: dict[str, Any], key: str) -> dict[str, Any]:
    """A sub-object of a click payload, or {} when Slack's shape is not there (payloads are untrusted)."""
    value = body.get(key)
    return value if isinstance(value, dict) else {}


def _where(body: dict[str, Any]) -> tuple[str, str]:
    container = _part(body, "container")
    channel = container.get("channel_id") or _part(body, "channel").get("id", "")
    ts = container.get("message_ts") or _part(body, "message").get("ts", "")
    return (channel, ts) if isinstance(channel, str) and isinstance(ts, str) else ("", "")


def _clicker(body: dict[str, Any]) -> str:
    user = _part(body, "user").get("id", "")
    return user if isinstance(user, str) else ""


async def _tell(respond: Any, text: str) -> None:
    """An ephemeral line to the clicker; a payload without a response_url gets none (nothing to answer to)."""
    try:
        await respond(response_type="ephemeral", replace_original=False, text=text)
    except ValueError:
        log.debug("click without a response_url; not answered: %s", text)


def _value(action: Any, key: str) -> str:
    """One string field of the button's JSON value ("" when the value is not what we put there)."""
    raw = action.get("value") if isinstance(action, dict) else None
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except (ValueError, RecursionError):
        value = {}
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""


async def _announce(bot: SlackBot, respond: Any, channel: str, ts: str, text: str) -> None:
    """Say in the alert's thread what was done; if the thread cannot take it, tell the clicker instead."""
    try:
        await bot.client.chat_postMessage(channel=channel, thread_ts=ts or None, text=text)
    except SlackApiError as exc:
        log.info("click result not posted in %s (%s); told the clicker", channel, exc.response.get("error"))
        await _tell(respond, text)


async def handle_mute(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, context: Any) -> None:
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, ts) = _clicker(body), _where(body)
    camera = _value(action, "camera")
    router = getattr(bot.runtime, "router", None)
    if not camera or router is None:
        await _tell(respond, "This alert has no camera to mute.")
        return
    who = Requester.slack(user, channel)
    if why := refusal(bot.settings, who, "alerts and pipelines"):
        await _tell(respond, why)
        return
    monitor = getattr(bot.runtime, "monitor", None)  # a camera's alerts are its owner's to silence, or an operator's
    runs = monitor.camera_owner(camera) if monitor is not None else None
    owner = Owner(user=runs) if runs else Owner()
    if change_refusal(bot.settings, owner, who, camera):
        await _tell(respond, f"{escape(camera)}'s alerts are {owner.label()}'s to mute, or an operator's "
                    f"(`slack.operators`); ask them.")
        return
    until = router.mute(camera, MUTE_SECONDS)
    when = time.strftime("%H:%M UTC", time.gmtime(until))
    await _announce(bot, respond, channel, ts, f":no_bell: <@{user}> muted alerts from *{escape(camera)}* until {when}.")


async def handle_stop(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, context: Any) -> None:
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, ts) = _clicker(body), _where(body)
    pipeline = _value(action, "pipeline")
    if not pipeline:
        await _tell(respond, "This alert has no pipeline to stop.")
        return
    reply = await answer(f"stop {pipeline}", command_context(bot, user, channel))
    if not reply.ok:
        await _tell(respond, escape(reply.text))
        return
    await _announce(bot, respond, channel, ts, f":octagonal_sign: <@{user}>: {escape(reply.text)}")


async def handle_false_alarm(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any,
                             context: Any) -> None:
    """Record the mark; repeated marks tighten the rule (it changes a rule: the allowlist applies)."""
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, _) = _clicker(body), _where(body)
    if why := refusal(bot.settings, Requester.slack(user, channel), CONTROLLED):
        await _tell(respond, why)
        return
    # what the alert was comes from our own record of it; the payload only names it
    posted = bot.posted_alerts.get(_value(action, "alert")) if bot.posted_alerts is not None else None
    runtime = bot.runtime
    if posted is None or getattr(runtime, "router", None) is None:
        await _tell(respond, "I no longer have this alert on record; tune its rule with `/vision rule` instead.")
        return
    marks = FalseAlarms(runtime.router, getattr(runtime, "monitor", None), getattr(runtime, "memory", None),
                        bot.settings)
    mark = FalseAlarm(posted.camera, posted.rule, posted.text, posted.counts, posted.time, user, posted.alert_id)
    # storage and memory writes touch files
    line, shown = await asyncio.to_thread(marks.marked, mark)
    if not posted.marked and bot.posted_alerts is not None:  # the alert says who marked it and what the rule does now
        await SlackAlertSink(bot, bot.posted_alerts).update(replace(posted, marked=escape(shown)))
    await _tell(respond, escape(line))


async def handle_feedback(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, context: Any) -> None:
    """👍/👎 under an answer: recorded in that thread's session (only a session the bot has), thanked privately."""
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, ts) = _clicker(body), _where(body)
    message = _part(body, "message")
    root = message.get("thread_ts") if isinstance(message.get("thread_ts"), str) else None
    team = _part(body, "team").get("id") or bot.team_id
    key = session_key(str(team), channel, root or DM_ROOT)
    rating = action.get("value") if isinstance(action, dict) else None
    if rating not in (GOOD, "bad") or bot.agent is None or not bot.agent.sessions.length(key):
        await _tell(respond, "I could not match this to one of my answers; nothing was recorded.")
        return
    await asyncio.to_thread(bot.agent.sessions.add_feedback, key, rating, user, ts)
    await _tell(respond, "Thanks, noted." if rating == GOOD else
                "Thanks, noted. Tell me in this thread what was wrong and I will try again.")


async def handle_stop_turn(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any,
                           context: Any) -> None:
    """Stop on a running turn: the asker (or anyone allowed to control pipelines) cancels it."""
    await ack()
    bot: SlackBot = context["vision"]
    user, (channel, _) = _clicker(body), _where(body)
    key = action.get("value") if isinstance(action, dict) else None
    owner = bot.running.owner(key) if isinstance(key, str) else None
    if owner is None:
        await _tell(respond, "That answer has already finished.")
        return
    if user != owner and (why := refusal(bot.settings, Requester.slack(user, channel), CONTROLLED)):
        await _tell(respond, f"Only <@{owner}> can stop this answer. {why}")
        return
    if not bot.running.stop(str(key), by=user):
        await _tell(respond, "That answer has already finished.")


def register(app: Any, bot: SlackBot) -> None:
    app.action(MUTE_ACTION)(handle_mute)
    app.action(STOP_ACTION)(handle_stop)
    app.action(FALSE_ALARM_ACTION)(handle_false_alarm)
    app.action(FEEDBACK_ACTION)(handle_feedback)
    app.action(STOP_TURN_ACTION)(handle_stop_turn)
