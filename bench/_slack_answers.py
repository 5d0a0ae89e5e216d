"""When an answer became visible in a Slack thread, read from the emulator's calls: the streamed or the posted path."""

from __future__ import annotations

from typing import Any

from tests.fakes.slack_api import ApiCall, SlackEmulator

STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def _shows_something(call: ApiCall) -> bool:
    """A stream call that puts a step or words on screen (not an empty start or a bare stop)."""
    return any(c.get("type") == "task_update" or (c.get("type") == "markdown_text" and str(c.get("text")).strip())
               or c.get("type") == "blocks" for c in call.params.get("chunks") or [] if isinstance(c, dict))


def _is_control(call: ApiCall) -> bool:
    """The Stop line of a running turn (an actions block), not part of the answer."""
    return any(b.get("type") == "actions" for b in call.params.get("blocks") or [] if isinstance(b, dict))


def _words(call: ApiCall) -> bool:
    return any(isinstance(c, dict) and c.get("type") == "markdown_text" and str(c.get("text")).strip()
               for c in call.params.get("chunks") or [])


def first_words(slack: SlackEmulator, channel: str, thread_ts: str) -> float | None:
    """When the model's first words reached the thread (emulator clock): the first stream call carrying text, or
    the first post of the answer (the posted path shows no step before its words)."""
    streams = {m["ts"] for m in slack.messages(channel, thread_ts) if "stream_mode" in m}
    for call in slack.calls:
        if not call.ok or call.params.get("channel") != channel:
            continue
        if call.method == "chat.startStream" and call.params.get("thread_ts") == thread_ts and _words(call) or \
                call.method in STREAM_METHODS[1:] and call.params.get("ts") in streams and _words(call) or \
                call.method == "chat.postMessage" and call.params.get("thread_ts") == thread_ts and not _is_control(call):
            return call.time
    return None


def answer_times(slack: SlackEmulator, channel: str, thread_ts: str) -> tuple[float | None, float | None]:
    """(first visible step or words, answer complete) as emulator clock times, for the bot's answer in a thread:
    a streamed message (its first step/words, its stopStream with the feedback row) or posted messages (the first
    and the last chat.postMessage of the answer)."""
    streams = {m["ts"] for m in slack.messages(channel, thread_ts) if "stream_mode" in m}
    ours: list[tuple[float, ApiCall]] = []
    for call in slack.calls:
        if not call.ok or call.params.get("channel") != channel:
            continue
        params: dict[str, Any] = call.params
        if call.method == "chat.startStream" and params.get("thread_ts") == thread_ts or \
                call.method in STREAM_METHODS[1:] and params.get("ts") in streams or \
                call.method == "chat.postMessage" and params.get("thread_ts") == thread_ts and not _is_control(call):
            ours.append((call.time, call))
    first = next((t for t, c in ours if c.method == "chat.postMessage" or _shows_something(c)), None)
    done = [t for t, c in ours if c.method == "chat.postMessage" or (c.method == "chat.stopStream"
                                                                      and c.params.get("blocks"))]
    return first, (max(done) if done else None)
