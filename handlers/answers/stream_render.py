"""AgentEvents → one streamed answer in the thread: task cards per tool call, the text as it is generated, frames.

The TurnRenderer interface, streamed (docs.slack.dev chat.startStream/appendStream/stopStream). The stream opens at
the turn's first visible event; each tool call is a task card (in_progress, then complete or error with a short
redacted result); the answer's text streams in, batched (handlers/answers/stream.py); the final RESPONSE/ASK_USER adds what
the stream has not shown yet, so the answer is in the message once; stopStream adds the 👍/👎 row. A frame is
uploaded without a channel and shown by an image block right after its step; one that cannot be (its upload
refused through a 429 storm) is posted as a file, and the streamed message ends before it so the answer stays
below the frame (streamed messages are ordered by when they started, not by their last words).

Where streaming is refused — a top-level DM (streams must be thread replies), a channel or workspace where
startStream errors — the turn is rendered by the post-at-end TurnRenderer; a permanent refusal is remembered for the
channel (one warning). If the stream breaks mid-turn, the rest of the turn (and of the answer) takes that path too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bot.agent.steps import label, outcome
from bot.events import AgentEvent, EventType
from bot.media.redaction import redact
from handlers.answers.feedback import feedback_blocks
from handlers.answers.opening import Step
from handlers.answers.render import TurnRenderer
from handlers.answers.stream import AnswerStream, StreamFailed
from handlers.answers.stream_text import for_slack, unshown
from handlers.state.threads import Conversation
from handlers.transport.uploads import upload_unshared

log = logging.getLogger(__name__)

# A retried model call voids its text, but what already streamed cannot be taken back: say so, then the new answer.
RESTARTED = "\n\n_(the connection dropped; starting the answer again)_\n\n"


def task_chunk(call_id: str, title: str, status: str, result: str | None = None, is_error: bool = False
               ) -> dict[str, Any]:
    chunk = {"type": "task_update", "id": call_id, "title": title, "status": status}
    if result is not None:
        chunk["output"] = outcome(result, is_error)  # first line, redacted, cut
    return chunk


def image_chunk(file_id: str, caption: str) -> dict[str, Any]:
    alt = redact(caption)[:2000] or "annotated frame"
    return {"type": "blocks", "blocks": [{"type": "image", "slack_file": {"id": file_id}, "alt_text": alt,
                                          "title": {"type": "plain_text", "text": alt[:200]}}]}


class StreamRenderer(TurnRenderer):
    """Renders one turn's events as a streamed message. TurnRenderer's own methods are the post-at-end path it
    falls back to; `finish()` leaves the final ✅ / ⚠️ as there."""

    def __init__(self, client: Any, conv: Conversation, status_supported: dict[str, bool],
                 stream_supported: dict[str, bool]) -> None:
        super().__init__(client, conv, status_supported)
        self._supported = stream_supported
        # A stream is a thread reply to someone: outside DMs Slack needs who it is for (recipient ids).
        self.streaming = (conv.thread_ts is not None and (conv.is_dm or bool(conv.user and conv.team))
                          and stream_supported.get(conv.channel) is not False)
        self.stream: AnswerStream | None = None
        self._titles: dict[str, str] = {}
        self._opening: dict[str, str] = {}  # first steps (handlers/answers/opening.py) not yet marked done
        self.on_stream: Callable[[str], None] | None = None  # told each streamed message's ts once Slack opened it

    def begin(self, steps: list[Step], before: Callable[[], Awaitable[None]] | None = None
              ) -> asyncio.Task[bool] | None:
        """Open the streamed message with the turn's first steps at once (the first in progress, the rest
        pending), before the prompt is built: the task sending them (after `before()`, e.g. the socket's owed
        acks), or None when nothing streams. Whatever the turn sends next waits behind it (the stream's lock,
        held from before `before` runs), so the steps are always the message's start."""
        if not self.streaming or not steps or self.stream is not None:
            return None
        self._opening = {s.id: s.title for s in steps}
        chunks = [task_chunk(s.id, s.title, "in_progress" if n == 0 else "pending") for n, s in enumerate(steps)]
        self._open()
        return asyncio.ensure_future(self._send(chunks, None, before=before))

    def step_done(self, step_id: str, output: str, failed: bool = False) -> None:
        """A first step finished: its card turns complete (or error) with `output`, in the next call that goes
        out (no call of its own); the next pending step, if any, is now in progress."""
        title = self._opening.pop(step_id, None)
        if title is None or self.stream is None or not self.streaming:
            return
        chunks = [task_chunk(step_id, title, "error" if failed else "complete", output, failed)]
        if self._opening:
            following = next(iter(self._opening))
            chunks.append(task_chunk(following, self._opening[following], "in_progress"))
        self.stream.later(chunks)

    async def split(self) -> None:
        """End the open streamed message here (its steps go with it): what is posted next reads below it, and the
        answer streams on in a new message after that."""
        if self.streaming and self.stream is not None:
            await self._guard(self.stream.split())

    def _settle_opening(self) -> None:
        """The model has begun (or the turn ends): first steps still open are done."""
        opening, self._opening = self._opening, {}
        if opening and self.stream is not None and self.streaming:
            self.stream.later([task_chunk(i, title, "complete", "done") for i, title in opening.items()])

    async def status(self, text: str) -> None:
        if self.stream is None or not self.streaming:  # once the message streams, its task cards say it
            await super().status(text)

    async def handle(self, ev: AgentEvent) -> None:
        kind, data = ev.type, ev.data
        self._settle_opening()
        if not self.streaming:
            await super().handle(ev)
        elif kind is EventType.TEXT_DELTA:
            await (self._restart() if data.get("restart") else self._text(str(data.get("text") or "")))
        elif kind is EventType.TOOL_CALL:
            await self._tool_call(data)
        elif kind is EventType.TOOL_RESULT:
            call_id = str(data.get("id") or "")
            title = self._titles.get(call_id) or label(str(data.get("name") or ""), None)
            failed = bool(data.get("is_error"))
            await self._send([task_chunk(call_id, title, "error" if failed else "complete",
                                         str(data.get("text") or ""), failed)], ev)
        else:  # THINKING, FRAME, RESPONSE, ASK_USER, ERROR: dispatched to this class's methods
            await super().handle(ev)

    async def _tool_call(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("id") or f"step{len(self._titles) + 1}")
        title = self._titles[call_id] = label(str(data.get("name") or ""), data.get("input"))
        if self.stream is not None:
            await self._guard(self.stream.flush())
            self.stream.mark()  # the text so far belonged to this model call, not to the final answer
        await self._send([task_chunk(call_id, title, "in_progress")], AgentEvent(EventType.TOOL_CALL, data))

    async def _text(self, piece: str) -> None:
        if piece and await self._guard(None):
            self._open().text(piece)  # sent by the stream's timer: the agent never waits for Slack here

    async def _restart(self) -> None:
        stream = self.stream
        if stream is None:
            return
        stream.drop()
        if stream.shown.strip():
            stream.text(RESTARTED)
            await self._guard(stream.flush())
        stream.mark()

    async def frame(self, image: bytes | None, caption: str) -> None:
        if not image:
            return
        if self.streaming:
            file_id = await upload_unshared(self.client, image, "frame", time.time())
            if file_id and await self._send([image_chunk(file_id, caption)], None, optional=True):
                self.frames += 1
                return
            if self.stream is not None:  # the open message would hold the answer that follows, above the file
                await self._guard(self.stream.split())
        await super().frame(image, caption)  # into the thread as a file, as before

    async def reply(self, markdown: str) -> None:
        if not markdown.strip():
            return
        self._settle_opening()
        if self.streaming:
            stream = self._open()
            if await self._guard(stream.finish_text(markdown)) and await self._guard(stream.stop(feedback_blocks())):
                self.replied = True
                return
        shown = self.stream.shown if self.stream is not None else ""
        await super().reply(unshown(for_slack(markdown), shown))  # what the stream did not show, posted at the end

    async def error(self, text: str) -> None:
        await self._close()
        await super().error(text)

    async def finish(self, working: asyncio.Future[Any] | None = None) -> None:
        await self._close()  # a turn that ended without an answer (stopped, crashed) leaves no open stream
        await super().finish(working)

    # -- the stream and its failures ------------------------------------------------------------------------

    def _open(self) -> AnswerStream:
        if self.stream is None:
            self.stream = AnswerStream(self.client, self.conv)
            self.stream.on_open = self.on_stream
        return self.stream

    async def _send(self, chunks: list[dict[str, Any]], ev: AgentEvent | None, optional: bool = False,
                    before: Callable[[], Awaitable[None]] | None = None) -> bool:
        """Send chunks (the first ones start the stream); False if they did not go out. A refused start, or a
        stream that broke, hands the rest of the turn (and `ev`, if given) to the post-at-end path."""
        if self.streaming:
            stream = self._open()
            try:
                await stream.chunks(chunks, optional, before)
                return True
            except StreamFailed as exc:
                if optional and stream.broken is None:
                    log.info("stream chunk refused in %s (%s)", self.conv.channel, exc.error)
                    return False
                self._give_up(exc)
        if ev is not None:
            await super().handle(ev)
        return False

    async def _guard(self, call: Any) -> bool:
        """Await a stream call; a broken stream (now, or in a background flush) ends streaming for this turn."""
        try:
            if call is not None:
                await call
            if self.stream is not None and self.stream.broken is not None:
                raise self.stream.broken
            return True
        except StreamFailed as exc:
            self._give_up(exc)
            return False

    def _give_up(self, exc: StreamFailed) -> None:
        if not self.streaming:
            return
        self.streaming = False
        channel = self.conv.channel
        if self.stream is not None:
            self.stream.close()
        if not exc.refused:
            log.warning("streaming in %s broke (%s); the rest of this turn is posted instead", channel, exc)
        elif exc.permanent:
            if self._supported.get(channel) is not False:
                log.warning("Slack refused streaming in %s (%s); answers there are posted at the end", channel, exc)
            self._supported[channel] = False
        else:
            log.info("streaming in %s unavailable for this turn (%s)", channel, exc)

    async def _close(self) -> None:
        """Stop a stream still open, without the feedback row (best effort: an error or the end of the turn)."""
        stream = self.stream
        if stream is None:
            return
        self._settle_opening()
        try:
            await (stream.stop() if self.streaming else stream.abandon())
        except StreamFailed as exc:
            log.info("stream in %s not stopped cleanly (%s)", self.conv.channel, exc)
            await stream.abandon()
        finally:
            stream.close()

def renderer_for(bot: Any, conv: Conversation) -> TurnRenderer:
    """The renderer of one turn: streamed (`slack.stream_answers`, the default) or posted at the end."""
    renderer = (StreamRenderer(bot.client, conv, bot.status_supported, bot.stream_supported)
                if bot.settings.slack.stream_answers else TurnRenderer(bot.client, conv, bot.status_supported))
    renderer.timezone = bot.settings.heartbeat.timezone
    renderer.book = getattr(bot, "posted_alerts", None)
    if isinstance(renderer, StreamRenderer):  # a process killed mid-turn leaves it open: the restart deletes it
        renderer.on_stream = lambda ts: bot.inflight.stream_opened(conv, ts)
    return renderer
