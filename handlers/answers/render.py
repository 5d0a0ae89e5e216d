"""AgentEvents → Slack calls in the same thread: status, reactions, frame uploads, the final reply."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.agent.steps import label
from bot.events import AgentEvent, EventType
from bot.media.redaction import redact
from bot.monitoring.search.moments import Moments
from handlers.answers.feedback import feedback_blocks
from handlers.answers.moments_blocks import moments_message
from handlers.answers.stream_text import for_slack, markdown_pieces
from handlers.state.alert_book import AlertBook
from handlers.state.threads import Conversation
from handlers.transport.mrkdwn import escape, escape_plain, fallback_text

log = logging.getLogger(__name__)

WORKING, DONE, FAILED = "eyes", "white_check_mark", "warning"
_HARMLESS = {"already_reacted", "no_reaction", "message_not_found"}
# Errors that say "not now" rather than "not here": they never turn assistant status off for a channel.
_TRANSIENT = {"ratelimited", "fatal_error", "internal_error", "service_unavailable", "request_timeout"}


async def react(client: Any, channel: str, ts: str, add: str | None = None, remove: str | None = None) -> None:
    """Swap reactions on a message; the ones Slack says are already in place are fine. Never raises: the client
    already retried 429s and resets, and a reaction that still fails must not cost the answer."""
    for method, name in ((client.reactions_remove, remove), (client.reactions_add, add)):
        if not name:
            continue
        try:
            await method(channel=channel, timestamp=ts, name=name)
        except SlackApiError as exc:
            if exc.response.get("error") not in _HARMLESS:
                log.warning("reaction %s on %s failed: %s", name, channel, exc.response.get("error"))
        except Exception as exc:  # connection gone for good after the client's retries
            log.warning("reaction %s on %s failed: %s", name, channel, type(exc).__name__)


async def post_markdown(client: Any, channel: str, thread_ts: str | None, markdown: str,
                        tail: list[dict[str, Any]] | None = None) -> list[str]:
    """Post Claude's markdown as Slack renders it natively (one markdown block per message, split on clean
    boundaries at Slack's 12,000 characters), redacted and with broadcasts defused; returns the timestamps.
    `tail` blocks (the feedback row) go under the last message."""
    posted = []
    pieces = markdown_pieces(for_slack(markdown))
    for n, piece in enumerate(pieces, 1):
        blocks: list[dict[str, Any]] = [{"type": "markdown", "text": piece}]
        if n == len(pieces) and tail:
            blocks += tail
        resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=fallback_text([escape_plain(piece)]),
                                             blocks=blocks, unfurl_links=False, unfurl_media=False)
        posted.append(resp["ts"])
    return posted


async def upload_frame(client: Any, channel: str, thread_ts: str | None, image: bytes, caption: str,
                       name: str = "frame") -> str | None:
    """Upload an annotated frame into the thread; returns None on success, else a one-line reason."""
    try:
        await client.files_upload_v2(channel=channel, thread_ts=thread_ts, file=image,
                                     filename=f"{name}-{int(time.time())}.jpg", title=redact(caption)[:250] or name,
                                     initial_comment=escape(caption) if caption else None)
        return None
    except SlackApiError as exc:
        err = exc.response.get("error", "error")
        log.warning("frame upload to %s failed: %s", channel, err)
        if err in ("not_in_channel", "channel_not_found"):
            return "I could not post the image here: invite me to this channel (`/invite @Vision Agent`)."
        return f"I could not upload the image ({err}); try again."


class TurnRenderer:
    """Renders one turn's events into its conversation; `finish()` leaves a final ✅ / ❌ on the message."""

    def __init__(self, client: Any, conv: Conversation, status_supported: dict[str, bool]) -> None:
        self.client, self.conv = client, conv
        self._status_ok = status_supported
        self.replied = False
        self.failed = False
        self.frames = 0
        self.timezone = "UTC"  # the workspace's (renderer_for sets it): a search's times are read in it
        self.book: AlertBook | None = None  # the alerts posted here: a search's rows link their messages

    async def status(self, text: str) -> None:
        """assistant.threads.setStatus, best effort: where Slack refuses it we stop asking (reactions remain)."""
        conv = self.conv
        if conv.thread_ts is None or self._status_ok.get(conv.channel) is False:
            return
        try:
            await self.client.assistant_threads_setStatus(channel_id=conv.channel, thread_ts=conv.thread_ts,
                                                          status=text)
            self._status_ok[conv.channel] = True
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error in _TRANSIENT:  # still ratelimited after the client's retries: skip this one line only
                log.info("setStatus in %s skipped (%s)", conv.channel, error)
                return
            log.info("setStatus unavailable in %s (%s); using reactions only", conv.channel, error)
            self._status_ok[conv.channel] = False
        except Exception as exc:  # best effort: a status line is never worth failing a turn
            log.info("setStatus in %s skipped (%s)", conv.channel, type(exc).__name__)

    async def handle(self, ev: AgentEvent) -> None:
        kind, data = ev.type, ev.data
        if kind is EventType.THINKING:
            await self.status("is thinking…")
        elif kind is EventType.TOOL_CALL:
            step = label(str(data.get("name") or ""), data.get("input"))  # people read steps, not tool ids
            await self.status(f"is {step[:1].lower()}{step[1:]}…")
        elif kind is EventType.FRAME:
            await self.frame(data.get("image"), data.get("caption") or "")
        elif kind is EventType.MOMENTS:
            await self.moments(data["moments"])
        elif kind in (EventType.RESPONSE, EventType.ASK_USER):
            await self.reply(data.get("text") or "")
        elif kind is EventType.ERROR:
            await self.error(data.get("text") or "Something went wrong.")

    async def frame(self, image: bytes | None, caption: str) -> None:
        if not image:
            return
        self.frames += 1
        problem = await upload_frame(self.client, self.conv.channel, self.conv.thread_ts, image, caption)
        if problem:
            await self.note(problem)

    async def moments(self, found: Moments) -> None:
        """A search's moments as their own message in the thread: the table and the best frames."""
        try:
            message = await moments_message(self.client, found, self.timezone, self.book)
            await self.client.chat_postMessage(channel=self.conv.channel, thread_ts=self.conv.thread_ts,
                                               unfurl_links=False, unfurl_media=False, **message)
            self.frames += len(found.pictures())
        except SlackApiError as exc:
            log.warning("search answer not posted in %s: %s", self.conv.channel, exc.response.get("error"))
            await self.note(f"I could not post the moments found here ({exc.response.get('error')}); they are in "
                            "my answer as text.")

    async def reply(self, markdown: str) -> None:
        if markdown.strip():
            await post_markdown(self.client, self.conv.channel, self.conv.thread_ts, markdown, feedback_blocks())
            self.replied = True

    async def note(self, text: str) -> None:
        """A one-line message from the adapter itself (refused file, upload problem)."""
        await self.client.chat_postMessage(channel=self.conv.channel, thread_ts=self.conv.thread_ts,
                                           text=escape(text))

    async def error(self, text: str) -> None:
        self.failed = True
        await self.note(f":warning: {text}")
        self.replied = True

    async def finish(self, working: asyncio.Future[Any] | None = None) -> None:
        """Clear the status and swap 👀 for ✅ (⚠️ when something failed). `working` is the 👀 call still in
        flight (maybe waiting out a 429): it lands first, so the swap cannot leave it behind forever."""
        if working is not None and not working.done():
            await asyncio.wait({working})
        if not self.replied:
            await self.status("")  # a reply clears the status by itself; without one, clear it explicitly
        await react(self.client, self.conv.channel, self.conv.message_ts,
                    add=FAILED if self.failed else DONE, remove=WORKING)
