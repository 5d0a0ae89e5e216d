"""The Slack alert sink: one alert = one top-level message (frame inside, buttons), updated in place by its summary."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.monitoring.alerts import Alert
from handlers.alerts.blocks import (
    FALSE_ALARM_ACTION,
    MUTE_ACTION,
    MUTE_SECONDS,
    STOP_ACTION,
    alert_blocks,
    fallback_text,
)
from handlers.alerts.digest_blocks import digest_blocks, digest_fallback, message_links
from handlers.context import SlackBot
from handlers.state.alert_book import AlertBook, PostedAlert
from handlers.state.threads import session_key
from handlers.transport.uploads import upload_unshared

__all__ = ["FALSE_ALARM_ACTION", "MUTE_ACTION", "MUTE_SECONDS", "STOP_ACTION", "SlackAlertSink"]

log = logging.getLogger(__name__)
NOT_READY_WAIT = 1.0  # a file just uploaded may not be usable in a block for a moment: one retry after this
REFUSED = ("not_in_channel", "channel_not_found", "is_archived")  # the channel will not take the app's post


async def upload_clip(client: Any, channel: str, thread_ts: str, clip_path: str, camera: str) -> str | None:
    """The alert's clip into its thread (a video cannot sit in an image block); why it failed, or None."""
    path = Path(clip_path)
    try:
        data = await asyncio.to_thread(path.read_bytes)
        await client.files_upload_v2(channel=channel, thread_ts=thread_ts, file=data, filename=path.name,
                                     title=f"{camera}: the seconds around the alert")
    except (OSError, SlackApiError) as exc:
        error = str(getattr(exc, "response", {}).get("error", exc) if isinstance(exc, SlackApiError) else exc)
        log.warning("clip upload to %s failed: %s", channel, error)
        return "the upload failed"
    return None


def no_clip_line(reason: str) -> str:
    """The one line an alert's thread gets when its clip does not follow."""
    return (f":warning: No clip for this alert: {reason}. The frame above is what the camera saw; "
            "ask here for a fresh look, or check the bot's log if clips keep failing.")


def seed_text(alert: Alert) -> str:
    """What the alert's thread session starts with; the clip id is how the model asks for the clip's frames."""
    text = f"[alert posted to this thread] {alert.camera}: {alert.text}" + (f" ({alert.summary})" if alert.summary else "")
    if alert.clip_path:
        text += f"\n[a clip of the seconds around the event is in the thread: clip id {Path(alert.clip_path).stem}]"
    return text


class SlackAlertSink:
    """An AlertRouter sink. After posting, the alert's thread becomes a session seeded with the alert,
    so a reply under it ("is that a delivery?") is about that event, no mention needed."""

    def __init__(self, bot: SlackBot, book: AlertBook) -> None:
        self.bot, self.book = bot, book

    @staticmethod
    def where(channel: str | None) -> str | None:
        """Where an alert for `channel` is posted, in words (None: without a channel it is not posted)."""
        return f"Slack <#{channel}>" if channel else None

    async def __call__(self, alert: Alert, channel: str | None) -> None:
        if alert.about and not alert.channel and await self._summarise(alert):
            return  # the summary went into the alert it is about
        if not channel:
            log.warning("alert from %s not posted: no channel; set VISION_AGENT_ALERT_CHANNEL or use "
                        "`/vision route #channel`", alert.camera)
            return
        client = self.bot.client
        # One lane per channel: while an alert waits out a 429, the next one for that channel queues behind it,
        # so alerts arrive in the order they happened.
        async with self.bot.lanes.hold(channel):
            file_id = await upload_unshared(client, alert.frame, alert.camera, alert.time) if alert.frame else None
            posted = await self._post(alert, channel, file_id)
            if posted is None:
                return
            root = posted.root
            if alert.clip_path:
                await upload_clip(client, posted.channel, root, alert.clip_path, alert.camera)
        self.book.put(posted)
        self.bot.threads.remember(self.bot.team_id, posted.channel, root, origin="alert")
        agent = self.bot.agent
        if agent is not None:
            await agent.seed_session(session_key(self.bot.team_id, posted.channel, root), seed_text(alert),
                                     alert.frame)

    async def clip_cut(self, alert: Alert, channel: str | None) -> None:
        """A clip sink: the clip cut after the alert went out goes into the alert's thread; a failure is one line."""
        posted = self.book.get(alert.alert_id)
        if posted is None:
            return  # the alert was not posted (no channel, Slack refused it): nothing to add a clip to
        root = posted.root
        if alert.clip_path:
            error = await upload_clip(self.bot.client, posted.channel, root, alert.clip_path, alert.camera)
        else:
            error = "too few frames were kept around the event to cut one"
        if error:
            try:
                await self.bot.client.chat_postMessage(channel=posted.channel, thread_ts=root, text=no_clip_line(error))
            except SlackApiError as exc:
                log.warning("no-clip note to %s failed: %s", posted.channel, exc.response.get("error"))
            return
        agent = self.bot.agent
        if agent is not None and alert.clip_path:
            key = session_key(self.bot.team_id, posted.channel, root)
            note = f"[a clip of the seconds around the event is now in the thread: clip id {Path(alert.clip_path).stem}]"
            async with agent.sessions.lock(key):  # a reply's turn may be running there: the note goes after it
                await agent.seed_session(key, note)

    async def checked(self, alert: Alert, channel: str | None) -> None:
        """A check sink (verified alerts): the model's look goes into the posted alert (chat.update, for everyone in
        the channel), and into its thread's session as quoted data."""
        posted = self.book.get(alert.alert_id)
        if posted is None or alert.check is None:
            return  # not posted (no channel, Slack refused it): nothing to update
        await self.update(replace(posted, check=alert.check.line()))
        agent = self.bot.agent
        if agent is not None:
            key = session_key(self.bot.team_id, posted.channel, posted.root)
            async with agent.sessions.lock(key):
                await agent.seed_session(key, f"[the model checked this alert]\n{alert.check.quoted()}")

    async def update(self, posted: PostedAlert) -> bool:
        """Rebuild a posted alert from its record (a check, a false-alarm mark) in place; False if Slack refused."""
        async with self.bot.lanes.hold(posted.channel):
            try:
                await self.bot.client.chat_update(channel=posted.channel, ts=posted.ts, text=fallback_text(posted),
                                                  blocks=alert_blocks(posted, with_image=bool(posted.file_id)))
            except SlackApiError as exc:
                log.warning("alert %s not updated (%s)", posted.ts, exc.response.get("error"))
                return False
        self.book.put(posted)
        return True

    async def _post(self, alert: Alert, channel: str, file_id: str | None) -> PostedAlert | None:
        """chat.postMessage with the frame's image block; if Slack will not take the image, once more, then without."""
        draft = PostedAlert.of(alert, channel, "", file_id)
        attempts = [(True, 0.0), (True, NOT_READY_WAIT), (False, 0.0)] if file_id else [(False, 0.0)]
        for with_image, wait in attempts:
            await asyncio.sleep(wait)
            try:
                resp = await self.bot.client.chat_postMessage(
                    channel=channel, thread_ts=alert.thread_ts, **await self._content(alert, draft, with_image),
                    unfurl_links=False, unfurl_media=False)
            except SlackApiError as exc:
                error = exc.response.get("error")
                if error == "invalid_blocks" and with_image:
                    log.info("alert image not accepted yet (%s); trying again", error)
                    continue
                log.error("alert to %s failed: %s (invite the bot to the channel or fix the route)", channel, error)
                if error in REFUSED and alert.notify:
                    return await self._to_asker(alert, channel, str(error), file_id)
                return None
            return PostedAlert.of(alert, resp["channel"], resp["ts"], file_id if with_image else None)
        return None

    async def _to_asker(self, alert: Alert, channel: str, error: str, file_id: str | None) -> PostedAlert | None:
        """A watch's answer the channel refused goes to its asker's DM with one line on why and what to do."""
        try:
            opened = await self.bot.client.conversations_open(users=alert.notify)
            dm = opened["channel"]["id"]
            await self.bot.client.chat_postMessage(channel=dm, text=(
                f"I could not post in <#{channel}> ({error}): `/invite @Vision Agent` there to get answers in "
                "the channel. Here is what you asked me to watch for:"))
        except SlackApiError as exc:
            log.error("alert for <@%s> not sent to their DM either: %s", alert.notify, exc.response.get("error"))
            return None
        return await self._post(replace(alert, channel=dm, thread_ts=None, notify=None), dm, file_id)

    async def _content(self, alert: Alert, draft: PostedAlert, with_image: bool) -> dict[str, Any]:
        """An alert's blocks and text; a scheduled digest's are its table and chart with the text as fallback."""
        if alert.digest is not None:
            tz = self.bot.settings.heartbeat.timezone
            posts = await message_links(self.bot.client, self.book, alert.digest)
            return {"blocks": digest_blocks(alert.digest, tz, posts), "text": digest_fallback(alert.digest, tz)}
        return {"blocks": alert_blocks(draft, with_image), "text": fallback_text(draft)}

    async def _summarise(self, alert: Alert) -> bool:
        """Put a tier-2 summary into the newest posted alert it is about (chat.update); False if none could take it."""
        posted = next((p for p in map(self.book.get, reversed(alert.about)) if p is not None), None)
        if posted is None:
            return False
        updated = posted.with_summary(alert.text)
        async with self.bot.lanes.hold(posted.channel):
            try:
                await self.bot.client.chat_update(channel=posted.channel, ts=posted.ts, text=fallback_text(updated),
                                                  blocks=alert_blocks(updated))
            except SlackApiError as exc:
                log.warning("summary not added to alert %s (%s); posting it", posted.ts, exc.response.get("error"))
                return False
        self.book.put(updated)
        agent = self.bot.agent
        if agent is not None:
            key = session_key(self.bot.team_id, posted.channel, posted.ts)
            await agent.seed_session(key, f"[tier-2 summary added to this alert] {alert.text}")
        return True
