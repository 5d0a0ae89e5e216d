"""The Slack emulator's streamed messages: chat.startStream / appendStream / stopStream as docs.slack.dev documents
them (chunks of markdown_text, task_update and blocks, recipient ids required outside DMs, errors after the stop)."""

from __future__ import annotations

from typing import Any

from tests.fakes.slack_methods import MAX_BLOCKS, SlackError, check_blocks

MAX_MARKDOWN = 12_000
TASK_STATUSES = {"pending", "in_progress", "complete", "error"}


def _valid(c: Any) -> bool:
    """One chunk as docs.slack.dev describes it: markdown_text (<= 12,000), task_update, or blocks (<= 50)."""
    if not isinstance(c, dict):
        return False
    if c.get("type") == "markdown_text":
        return isinstance(c.get("text"), str) and len(c["text"]) <= MAX_MARKDOWN
    if c.get("type") == "task_update":
        return bool(c.get("id") and c.get("title") and c.get("status") in TASK_STATUSES)
    if c.get("type") == "blocks":
        blocks = c.get("blocks")
        if not isinstance(blocks, list) or not 0 < len(blocks) <= MAX_BLOCKS:
            return False
        check_blocks(blocks)  # invalid_blocks, as a message's blocks
        return True
    return False


def _chunks(params: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(mode, chunks) of one call: markdown_text or chunks, never both."""
    has_md, has_chunks = params.get("markdown_text") not in (None, ""), params.get("chunks") not in (None, [])
    if has_md and has_chunks:
        raise SlackError("cannot_provide_both_markdown_text_and_chunks")
    if has_md:
        chunks = [{"type": "markdown_text", "text": params["markdown_text"]}]
        mode = "markdown_text"
    else:
        chunks, mode = params.get("chunks") or [], "chunks"
    if not isinstance(chunks, list):
        raise SlackError("invalid_chunks")
    if not all(_valid(c) for c in chunks):
        raise SlackError("invalid_chunks")
    return mode, chunks


class StreamMethods:
    """Mixed into SlackEmulator. A streamed message keeps `streaming`, its `text` (markdown so far) and `tasks`."""

    stream_error: str | None = None  # set to make chat.startStream fail with this error (a workspace refusing it)

    def _apply(self, msg: dict[str, Any], mode: str, chunks: list[dict[str, Any]]) -> None:
        if msg.get("stream_mode") not in (None, mode):
            raise SlackError("streaming_mode_mismatch")
        for c in chunks:  # an image block's slack_file: an uploaded image, as in any message
            if c["type"] == "blocks":
                self._check_files({"blocks": c["blocks"]})
        msg["stream_mode"] = mode
        for c in chunks:
            if c["type"] == "markdown_text":
                msg["text"] += c["text"]
            elif c["type"] == "task_update":
                msg["tasks"][c["id"]] = dict(c)
            msg["chunks"].append(c)

    def api_chat_startStream(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel"):
            raise SlackError("channel_not_found")
        ch = self.channel(params["channel"])
        if not params.get("thread_ts"):
            raise SlackError("invalid_arguments")
        if self.stream_error:
            raise SlackError(self.stream_error)
        if not ch.is_im:  # "Required when streaming to channels"
            if not params.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
            if not params.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
        self.find_message(ch.id, params["thread_ts"])
        mode, chunks = _chunks(params)
        msg = self._bot_message({"text": "", "thread_ts": params["thread_ts"]})
        msg.update(text="", streaming=True, chunks=[], tasks={}, stream_mode=None)
        if chunks:
            self._apply(msg, mode, chunks)
        msg = self.store_message(ch.id, msg)
        self.echo_bot_message(ch, msg)  # like any message the app posts, it comes back as a message event
        return {"channel": ch.id, "ts": msg["ts"]}

    def _stream_message(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel"):
            raise SlackError("channel_not_found")
        if not params.get("ts"):
            raise SlackError("invalid_arguments")
        msg = self.find_message(self.channel(params["channel"]).id, params["ts"])
        if msg.get("user") != self.bot_user_id:
            raise SlackError("message_not_owned_by_app")
        if not msg.get("streaming"):
            raise SlackError("message_not_in_streaming_state")
        return msg

    def api_chat_appendStream(self, params: dict[str, Any]) -> dict[str, Any]:
        msg = self._stream_message(params)
        if params.get("markdown_text") in (None, "") and params.get("chunks") in (None, []):
            raise SlackError("markdown_text_or_chunks_required")
        self._apply(msg, *_chunks(params))
        return {"channel": params["channel"], "ts": msg["ts"]}

    def api_chat_stopStream(self, params: dict[str, Any]) -> dict[str, Any]:
        msg = self._stream_message(params)
        mode, chunks = _chunks(params)
        if chunks:
            self._apply(msg, mode, chunks)
        if params.get("blocks"):
            check_blocks(params["blocks"])
            msg["blocks"] = params["blocks"]
        msg["streaming"] = False
        return {"channel": params["channel"], "ts": msg["ts"], "message": dict(msg)}
