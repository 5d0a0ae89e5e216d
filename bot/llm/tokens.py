"""The one token estimate: for a text, for Messages API content (messages, blocks, images), for a whole prompt;
and the one rule cutting a text to a token budget."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from bot.long_texts import once_per_long_text

IMAGE_TOKENS = 1600  # a 1568 px image costs about this much; base64 length says nothing about it
_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


@once_per_long_text()  # the tool definitions and the system prompt, counted twice a turn (compaction's check, the budget's)
def estimate_tokens(text: str) -> int:
    """A conservative token count (words, digit runs and each punctuation mark count as one, >= chars/3.5).

    Claude's tokenizer is not available offline; this over-counts JSON and prose, so a budget that holds here
    holds for the real tokenizer too.
    """
    return max(len(_TOKEN.findall(text)), math.ceil(len(text) / 3.5))


def content_tokens(content: Any) -> int:
    """Tokens of messages or blocks: text by `estimate_tokens`, a fixed cost per image, tool input as JSON."""
    if isinstance(content, str):
        return estimate_tokens(content)
    if isinstance(content, list):
        return sum(content_tokens(c) for c in content)
    if isinstance(content, dict):
        if content.get("type") == "image":
            return IMAGE_TOKENS
        if "content" in content:
            return content_tokens(content["content"]) + 8
        if content.get("type") == "tool_use":
            return estimate_tokens(json.dumps(content.get("input", {}))) + 16
        return sum(content_tokens(v) for k, v in content.items() if k not in ("signature", "data"))
    return 0


def prompt_tokens(messages: Any, system: Any, tools: list[dict[str, Any]]) -> int:
    """A whole request's prompt: messages, system and the tool definitions (as the JSON the API receives)."""
    return content_tokens(messages) + content_tokens(system) + (estimate_tokens(json.dumps(tools)) if tools else 0)


def clip_text(text: str, max_tokens: int) -> tuple[str, int]:
    """`text` cut to about `max_tokens` by `estimate_tokens`: its head and tail around a marker saying how much
    was cut (a log or a paste matters most at its ends). Returns (text, characters cut); 0 cut = unchanged."""
    total = estimate_tokens(text)
    if total <= max_tokens:
        return text, 0
    keep = int(len(text) * max_tokens / total)
    while True:
        head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :]
        cut = len(text) - len(head) - len(tail)
        marker = (f"\n\n[... {cut:,} of {len(text):,} characters cut here: the text was longer than the "
                  f"{max_tokens:,}-token limit for one message ...]\n\n")
        out = head + marker + tail
        if estimate_tokens(out) <= max_tokens or keep == 0:
            return out, cut
        keep = int(keep * 0.9)
