"""The context guard: what goes into a session fits the window (messages and tool results are cut to a budget),
and old turns are summarised when the history nears the window, so a thread never stays too long for the model."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.agent.sessions import is_tool_result_message
from bot.agent.tools import ToolResult
from bot.llm.budget import Payer
from bot.llm.errors import LLMError
from bot.llm.tokens import clip_text, content_tokens, prompt_tokens

if TYPE_CHECKING:
    from bot.agent.sessions import SessionStore
    from bot.llm.client import LLMClient, WaitBudget
    from workspace.memory import MemoryStore

log = logging.getLogger(__name__)
COMPACT_AT = 0.8  # share of the context window past which maybe_compact summarises older turns
KEEP_RECENT = 0.5  # recent turns kept verbatim may fill up to this share of the window

SUMMARY_SYSTEM = (
    "You summarise a conversation between a user and a computer-vision assistant so the assistant can continue "
    "it later without the full transcript. Keep: the user's goals and preferences, cameras, models and workflow "
    "ids used, pipelines started or stopped (names/ids and state), findings and numbers, open questions and "
    "promises. Messages are marked with their author (<message from_user=…>): say who asked for what, and keep "
    "what someone asked for on another person's behalf attributed to the one who wrote it. Drop chit-chat. Write "
    "compact bullet points, at most 300 words."
)


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
    """Near the context window: summarise old turns (the summary also goes to memory) and compact the session.

    One message or tool result may fill at most a quarter of the window (or `message_tokens`, if smaller): with
    the recent turns kept below half of it, compaction can always make room for a new turn. When the API says a
    prompt is too long (`too_long`), the next check summarises every turn but the current one; when the summary
    itself fails and the history is over the window, the old turns are dropped with a plain note instead.
    """

    def __init__(self, llm: LLMClient, sessions: SessionStore, window: int, memory: MemoryStore | None = None,
                 message_tokens: int | None = None) -> None:
        self.llm, self.sessions, self.window, self.memory = llm, sessions, window, memory
        self.message_tokens = min(message_tokens or window, window // 4)
        self._marks: dict[str, tuple[int, int]] = {}  # key -> (prompt tokens of the last call, history length)
        self._squeeze: set[str] = set()  # sessions the API called too long: the next check keeps only one turn

    def clip(self, text: str) -> tuple[str, str]:
        """A user's text cut to the message budget, and a note telling them what was cut ("" when nothing was)."""
        out, cut = clip_text(text, self.message_tokens)
        if not cut:
            return text, ""
        return out, (f"_Your message was {len(text):,} characters, more than one message may carry (about "
                     f"{self.message_tokens:,} tokens): I read its first and last parts, {cut:,} characters in "
                     "the middle were cut. Send long text in parts._")

    def clip_result(self, result: ToolResult) -> ToolResult:
        """A tool result whose text is cut to the message budget (the marker in it tells the model)."""
        text, cut = clip_text(result.text, self.message_tokens)
        return replace(result, text=text) if cut else result

    def too_long(self, key: str) -> None:
        """The API said the prompt exceeds its window (whatever our estimate says): the next check summarises
        every turn but the current one."""
        self._squeeze.add(key)

    def mark(self, key: str, usage: dict[str, int], history_len: int) -> None:
        """Record the real prompt size of the last call; later messages are estimated on top of it."""
        prompt = sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        self._marks[key] = (prompt, history_len)

    def estimate(self, key: str, history: list[dict[str, Any]], system: list, defs: list) -> int:
        mark = self._marks.get(key)
        if mark and mark[1] <= len(history):
            return mark[0] + content_tokens(history[mark[1]:])
        return prompt_tokens(history, system, defs)

    def keep_from(self, history: list[dict[str, Any]], only_current: bool = False) -> int:
        """Where the kept recent turns start: whole turns only, at least the current one."""
        starts = turn_starts(history)
        keep = starts[-1] if starts else 0
        for s in reversed(starts[:-1] if not only_current else []):
            if content_tokens(history[s:]) > KEEP_RECENT * self.window:
                break
            keep = s
        return keep

    async def maybe_compact(self, key: str, system: list, defs: list, budget: WaitBudget | None = None,
                            writer: str | None = None, payer: Payer | None = None) -> bool:
        """Compact the session if it nears the window; True when it did.

        writer: the audience the summary is remembered for (`bot.rights.audience` of the asker), or None when the
        asker may not write memory: then the summary only replaces the turns in the session, like `remember` refused.
        """
        history = self.sessions.history(key)
        size = self.estimate(key, history, system, defs)
        forced = key in self._squeeze
        self._squeeze.discard(key)
        if size <= COMPACT_AT * self.window and not forced:
            return False
        keep = self.keep_from(history, only_current=forced)
        if keep <= 0:
            return False  # only the current turn is left; nothing old to summarise
        try:
            resp = await self.llm.chat(summary_request(history[:keep]), [], [{"type": "text", "text": SUMMARY_SYSTEM}],
                                       max_tokens=1024, thinking=False, session_key=key, cache_history=False,
                                       budget=budget, payer=payer)
            summary = resp.text or "(no summary)"
        except LLMError as exc:
            log.warning("context summary for %s failed: %s", key, exc)
            if size <= self.window and not forced:
                return False  # the request still fits: summarise next time rather than lose the turns
            # Over the window the next request fails anyway: drop the old turns with a plain note instead.
            summary = f"(The earlier conversation could not be summarised ({exc}); its last lines were:)\n"
            summary += transcript_text(history[:keep], max_chars=2000)
        else:
            if self.memory is not None and writer is not None:  # the pre-compaction flush: it survives in memory
                self.memory.store(f"Summary of conversation {key}:\n{summary}", "knowledge", audience=writer)
        if not self.sessions.compact(key, summary, keep):
            return False
        self._marks.pop(key, None)
        return True
