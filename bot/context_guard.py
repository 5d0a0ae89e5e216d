"""Context guard helpers: token estimates, turn boundaries, a plain-text transcript to summarise."""

from __future__ import annotations

import json
import logging
from typing import Any

from bot.llm_errors import LLMError
from bot.sessions import is_tool_result_message

log = logging.getLogger(__name__)
COMPACT_AT = 0.8  # of the context window (seed 7.5)
KEEP_RECENT = 0.5  # recent turns kept verbatim may fill up to this share of the window

IMAGE_TOKENS = 1600  # a 1568 px image costs about this much; base64 length says nothing about it
SUMMARY_SYSTEM = (
    "You summarise a conversation between a user and a computer-vision assistant so the assistant can continue "
    "it later without the full transcript. Keep: the user's goals and preferences, cameras, models and workflow "
    "ids used, pipelines started or stopped (names/ids and state), findings and numbers, open questions and "
    "promises. Drop chit-chat. Write compact bullet points, at most 300 words."
)


def estimate_tokens(content: Any) -> int:
    """A rough token count of messages or blocks (chars / 4, fixed cost per image)."""
    if isinstance(content, str):
        return len(content) // 4
    if isinstance(content, list):
        return sum(estimate_tokens(c) for c in content)
    if isinstance(content, dict):
        if content.get("type") == "image":
            return IMAGE_TOKENS
        if "content" in content:
            return estimate_tokens(content["content"]) + 8
        if content.get("type") == "tool_use":
            return len(json.dumps(content.get("input", {}))) // 4 + 16
        return sum(estimate_tokens(v) for k, v in content.items() if k not in ("signature", "data"))
    return 0


def turn_starts(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes of user messages that start a turn (not tool results)."""
    return [i for i, m in enumerate(messages) if m["role"] == "user" and not is_tool_result_message(m)]


def _render_block(role: str, block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return f"{role}: {block['text']}"
    if kind == "tool_use":
        return f"[{role} called {block['name']}({json.dumps(block.get('input', {}))[:500]})]"
    if kind == "tool_result":
        inner = block.get("content")
        text = inner if isinstance(inner, str) else " ".join(
            b.get("text", "") for b in inner or [] if b.get("type") == "text"
        )
        err = " (error)" if block.get("is_error") else ""
        return f"[tool result{err}: {text[:800]}]"
    if kind == "image":
        return f"[{role} image]"
    return ""  # thinking blocks are the model's scratch work; the summary does not need them


def transcript_text(messages: list[dict[str, Any]], max_chars: int = 120_000) -> str:
    """A plain-text rendering of messages for a summary request (tail kept if too long)."""
    lines: list[str] = []
    for m in messages:
        role = "User" if m["role"] == "user" else "Assistant"
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        lines += [line for line in (_render_block(role, b) for b in blocks) if line]
    text = "\n".join(lines)
    return text if len(text) <= max_chars else "[...]\n" + text[-max_chars:]


def summary_request(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The one-message request asking the model to summarise `messages`."""
    return [{
        "role": "user",
        "content": "Summarise this conversation so far for your own later reference:\n\n" + transcript_text(messages),
    }]


class ContextGuard:
    """Near the context window: summarise old turns (the summary also goes to memory) and compact the session."""

    def __init__(self, llm: Any, sessions: Any, window: int, services: dict[str, Any]) -> None:
        self.llm, self.sessions, self.window, self.services = llm, sessions, window, services
        self._marks: dict[str, tuple[int, int]] = {}  # key -> (prompt tokens of the last call, history length)

    def mark(self, key: str, usage: dict[str, int], history_len: int) -> None:
        """Record the real prompt size of the last call; later messages are estimated on top of it."""
        prompt = sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        self._marks[key] = (prompt, history_len)

    def estimate(self, key: str, history: list[dict[str, Any]], system: list, defs: list) -> int:
        mark = self._marks.get(key)
        if mark and mark[1] <= len(history):
            return mark[0] + estimate_tokens(history[mark[1]:])
        return estimate_tokens(history) + estimate_tokens(system) + estimate_tokens(json.dumps(defs))

    def keep_from(self, history: list[dict[str, Any]]) -> int:
        """Where the kept recent turns start: whole turns only, at least the current one."""
        starts = turn_starts(history)
        keep = starts[-1] if starts else 0
        for s in reversed(starts[:-1]):
            if estimate_tokens(history[s:]) > KEEP_RECENT * self.window:
                break
            keep = s
        return keep

    async def maybe_compact(self, key: str, system: list, defs: list) -> bool:
        """Compact the session if it nears the window; True when it did."""
        history = self.sessions.history(key)
        if self.estimate(key, history, system, defs) <= COMPACT_AT * self.window:
            return False
        keep = self.keep_from(history)
        if keep <= 0:
            return False  # only the current turn is left; nothing old to summarise
        try:
            resp = await self.llm.chat(summary_request(history[:keep]), [], [{"type": "text", "text": SUMMARY_SYSTEM}],
                                       max_tokens=1024, thinking=False, session_key=key, cache_history=False)
        except LLMError as exc:
            log.warning("context summary for %s failed: %s", key, exc)
            return False
        summary = resp.text or "(no summary)"
        memory = self.services.get("memory")
        if memory is not None:  # the pre-compaction flush: what mattered survives in memory too
            memory.store(f"Summary of conversation {key}:\n{summary}", "knowledge")
        if not self.sessions.compact(key, summary, keep):
            return False
        self._marks.pop(key, None)
        return True
