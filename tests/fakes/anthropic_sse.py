"""The server-sent events the Messages API streams for a complete message (for the emulator)."""

from __future__ import annotations

import json
from typing import Any


def _chunks(s: str, n: int = 12) -> list[str]:
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


def sse_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The streaming events the real API sends for a complete message."""
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for i, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            first, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
        elif kind == "tool_use":
            first = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(json.dumps(block["input"]))]
        elif kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c} for c in _chunks(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            first, deltas = block, []
        events.append({"type": "content_block_start", "index": i, "content_block": first})
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    events.append({"type": "message_stop"})
    return events
