"""One streamed answer in a thread: chat.startStream / appendStream / stopStream (docs.slack.dev), batched.

Text is buffered and sent at most once per FLUSH_INTERVAL (appendStream is Tier 4, 100+/min: one call a second per
stream is kind to it and still reads as live); a task card or an image first flushes the text before it, so the
message keeps the order things happened in. Every call goes through the one client (its retry handlers wait out
429s and resets). Each append carries at most MAX_APPEND characters of markdown (Slack's limit per call); a message
past MESSAGE_BUDGET characters is stopped and the answer goes on in a new streamed message in the same thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError

from handlers.answers.stream_text import MAX_MARKDOWN, clean_head, for_slack, unshown
from handlers.state.threads import Conversation

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 1.0
MAX_APPEND = MAX_MARKDOWN  # docs.slack.dev: markdown_text "Limit this field to 12,000 characters"
# Slack cuts a message's text at 40,000 characters; 36k leaves room for the task cards and the feedback row, and
# three full appends is already a long read. Past it the answer continues in a new streamed message.
MESSAGE_BUDGET = 36_000
TRANSIENT = {"ratelimited", "fatal_error", "internal_error", "service_unavailable", "request_timeout"}
# "Not now" or "not for this turn" (the channel may be fixed by an invite): never turn streaming off for a channel.
_NOT_PERMANENT = TRANSIENT | {"not_in_channel", "channel_not_found", "is_archived", "invalid_arguments",
                              "invalid_blocks", "invalid_chunks", "missing_recipient_user_id",
                              "missing_recipient_team_id"}


class StreamFailed(Exception):
    """A stream call Slack refused (after the client's retries). `refused`: the turn's first chat.startStream
    failed (nothing was shown); `permanent`: and the error says this channel refuses streaming for good."""

    def __init__(self, method: str, error: str, refused: bool = False, permanent: bool = False) -> None:
        super().__init__(f"{method}: {error}")
        self.error, self.refused, self.permanent = error, refused, permanent


def md(text: str) -> dict[str, Any]:
    return {"type": "markdown_text", "text": text}


class AnswerStream:
    """The streamed message(s) of one turn, started by the first thing it sends. `shown` is the (redacted) text
    Slack has accepted since the last `mark()`; `broken` is set once a call failed (the turn stops streaming)."""

    def __init__(self, client: Any, conv: Conversation, interval: float = FLUSH_INTERVAL) -> None:
        self.client, self.conv, self.interval = client, conv, interval
        self.ts: str | None = None
        self.shown = ""
        self.broken: StreamFailed | None = None
        self._started = False
        self._buffer = ""
        self._size = 0  # characters in the current message
        self._last = 0.0  # when text last went out
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._flushing = False  # the timer is sending: let it finish (cancelling could lose what it sent)
        self._named: list[str] = []  # people this turn's text notified: the mention limit is per answer, not per append
        self._tail = ""  # the last characters of text the current message shows ("": none yet)
        self._apart = False  # the next text belongs to a new model call (after a tool call)
        self._riders: list[dict[str, Any]] = []  # chunks that go out with the next call (`later`)
        self.on_open: Callable[[str], None] | None = None  # told each message's ts once Slack opened it

    def text(self, piece: str) -> None:
        """Queue answer text; it goes out within `interval` (at once if nothing went out lately)."""
        if not piece or self.broken:
            return
        self._buffer += piece
        if self._timer is None or self._timer.done():
            wait = max(0.0, self._last + self.interval - time.monotonic())
            self._timer = asyncio.ensure_future(self._flush_later(wait))

    def later(self, chunks: list[dict[str, Any]]) -> None:
        """Chunks that need no call of their own (a step turned complete): they go out with the next call, ahead of
        what it carries, so the message keeps the order things happened in and no Slack call is spent on them."""
        self._riders += chunks

    def drop(self) -> None:
        """Forget text not sent yet (a retried model call voids it)."""
        self._buffer = ""

    def mark(self) -> None:
        """A new model call begins: `shown` counts from here, and its text starts a paragraph of its own (the text
        before a tool call and the text after it are two thoughts, not one glued sentence)."""
        self.shown = ""
        self._apart = True

    async def flush(self) -> None:
        """Send all queued text (its model call is over)."""
        async with self._lock:
            await self._send_buffer(whole=True)

    async def chunks(self, chunks: list[dict[str, Any]], optional: bool = False,
                     before: Callable[[], Awaitable[None]] | None = None) -> None:
        """Task cards or blocks, after the text queued before them. `optional`: if Slack refuses these chunks
        (e.g. an image it cannot show yet), raise StreamFailed but keep streaming. `before`: awaited first, with
        the stream held (nothing else of this stream goes out ahead of these chunks meanwhile)."""
        async with self._lock:
            if before is not None:
                await before()
            await self._send_buffer(whole=True)
            await self._send(chunks, optional)

    async def split(self) -> None:
        """End the current message here (what is queued goes out first): something posted into the thread now
        comes after it, and the next text starts a new streamed message after that."""
        async with self._lock:
            if self.ts is None:
                return
            await self._send_buffer(whole=True)
            await self._next_message()

    async def finish_text(self, final: str) -> None:
        """Show the part of the final answer the stream has not shown yet (queued text is replaced by it)."""
        async with self._lock:
            self._buffer = ""
            if self.broken:
                raise self.broken
            await self._send_text(unshown(for_slack(final, self._named), self.shown))

    async def stop(self, blocks: list[dict[str, Any]] | None = None) -> None:
        """Send what is queued and stop the stream (`blocks` under the message); nothing if it never started."""
        async with self._lock:
            self._cancel_timer()
            if self.ts is None:
                return
            await self._send_buffer(whole=True)
            extra: dict[str, Any] = {"blocks": blocks} if blocks else {}
            if self._riders:
                extra["chunks"], self._riders = self._riders, []
            await self._call("chat.stopStream", **extra)
            self.ts = None

    async def abandon(self) -> None:
        """A broken stream: stop it if Slack still lets us (best effort), so it does not stay 'streaming'."""
        self._cancel_timer()
        try:
            if self.ts is not None:
                await self.client.api_call("chat.stopStream", json={"channel": self.conv.channel, "ts": self.ts})
        except Exception as exc:  # it is broken already; the answer goes out the other way
            log.info("broken stream %s in %s not stopped (%s)", self.ts, self.conv.channel, type(exc).__name__)
        self.ts = None

    def close(self) -> None:
        """Stop the flush timer (the turn is over or falls back)."""
        self._cancel_timer()

    def _cancel_timer(self) -> None:
        if self._timer is not None and not self._timer.done() and not self._flushing:
            self._timer.cancel()

    async def _flush_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self._flushing = True
        try:
            async with self._lock:
                await self._send_buffer(whole=False)
        except StreamFailed:  # kept in `broken`, seen by the renderer at its next call; the answer is not lost
            pass
        finally:
            self._flushing = False

    async def _send_buffer(self, whole: bool) -> None:
        """Send the queued text, redacted and defused (for_slack). While the model still writes (`whole` False) the last word waits:
        a credential cut in two between pieces would pass the redactor, and none contains whitespace."""
        if self.broken:
            raise self.broken
        text = self._buffer
        cut = len(text) if whole else max(text.rfind(" "), text.rfind("\n")) + 1
        self._buffer = text[cut:]
        await self._send_text(for_slack(text[:cut], self._named))

    async def _send_text(self, text: str) -> None:
        if self._apart and text.strip():
            self._apart = False
            if self._tail and not self._tail.endswith("\n\n"):  # the message already has text: a paragraph between
                text = ("\n" if self._tail.endswith("\n") else "\n\n") + text.lstrip(" ")
        while text:
            room = MESSAGE_BUDGET - self._size
            if len(text) <= room:
                await self._append(text)
                return
            head = clean_head(text, room) if room > 0 else ""  # this message is full: end it on a boundary
            await self._append(head)
            await self._next_message()
            text = text[len(head):].lstrip("\n")

    async def _append(self, text: str) -> None:
        for i in range(0, len(text), MAX_APPEND):  # one message's markdown, so any cut between calls is fine
            piece = text[i:i + MAX_APPEND]
            await self._send([md(piece)])
            self._size += len(piece)
            self.shown += piece
            self._tail = (self._tail + piece)[-2:]
            self._last = time.monotonic()

    async def _send(self, chunks: list[dict[str, Any]], optional: bool = False) -> None:
        riders, self._riders = self._riders, []
        try:
            if self.ts is None:
                await self._start(riders + chunks)
            else:
                await self._call("chat.appendStream", optional=optional, chunks=riders + chunks)
        except StreamFailed:
            if optional and self.broken is None:  # only `chunks` were refused: the riders go with the next call
                self._riders = riders + self._riders
            raise

    async def _start(self, chunks: list[dict[str, Any]]) -> None:
        """chat.startStream in the conversation's thread, addressed to the asker (required outside DMs)."""
        conv, first = self.conv, not self._started
        body: dict[str, Any] = {"channel": conv.channel, "thread_ts": conv.thread_ts, "task_display_mode": "timeline",
                                "recipient_user_id": conv.user, "recipient_team_id": conv.team}
        try:
            resp = await self.client.api_call("chat.startStream", json={**body, **({"chunks": chunks} if chunks else {})})
        except Exception as exc:
            error = str(exc.response.get("error") or "error") if isinstance(exc, SlackApiError) else type(exc).__name__
            # A connection gone after the client's retries, or a "not now" error: this turn only.
            permanent = isinstance(exc, SlackApiError) and error not in _NOT_PERMANENT
            self.broken = StreamFailed("chat.startStream", error, refused=first, permanent=first and permanent)
            raise self.broken from exc
        self.ts, self._started, self._size, self._tail = str(resp["ts"]), True, 0, ""
        if self.on_open is not None:
            self.on_open(self.ts)

    async def _next_message(self) -> None:
        """This message is full: stop it; the next text starts a new streamed message in the same thread. Steps
        still riding (`later`) belong to this message: they go with its stop."""
        extra: dict[str, Any] = {}
        if self._riders:
            extra["chunks"], self._riders = self._riders, []
        await self._call("chat.stopStream", **extra)
        self.ts, self._size = None, 0

    async def _call(self, method: str, *, optional: bool = False, **body: Any) -> None:
        try:
            await self.client.api_call(method, json={"channel": self.conv.channel, "ts": self.ts, **body})
            return
        except SlackApiError as exc:
            failure = StreamFailed(method, str(exc.response.get("error") or "error"))
        except Exception as exc:  # connection gone after the client's retries
            failure = StreamFailed(method, type(exc).__name__)
        if not optional:
            self.broken = failure
        raise failure
