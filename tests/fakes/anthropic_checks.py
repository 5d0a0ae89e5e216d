"""Request validation and prompt-cache accounting for the Messages API emulator (rules of the real API)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from typing import Any

from PIL import Image

Problem = tuple[int, str, str]
BLOCK_FIELDS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
ROLE_BLOCKS = {"user": {"text", "image", "tool_result"},
               "assistant": {"text", "tool_use", "thinking", "redacted_thinking"}}
MEDIA_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _bad(msg: str) -> Problem:
    return 400, "invalid_request_error", msg


def _canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(x: Any) -> int:
    return len(_canon(x)) // 4 if x is not None else 0


def _check_block(b: Any, where: str, role: str) -> Problem | None:
    if not isinstance(b, dict) or b.get("type") not in BLOCK_FIELDS:
        return _bad(f"{where}: unknown content block type {b.get('type') if isinstance(b, dict) else b!r}")
    kind = b["type"]
    extra = set(b) - BLOCK_FIELDS[kind]
    if extra:
        return _bad(f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted")
    if kind not in ROLE_BLOCKS[role]:
        return _bad(f"{where}: `{kind}` blocks are not allowed in `{role}` messages")
    if kind == "text" and not str(b.get("text", "")).strip():
        return _bad(f"{where}: text content blocks must contain non-whitespace text")
    if kind == "image":
        src = b.get("source") or {}
        if src.get("type") != "base64" or src.get("media_type") not in MEDIA_TYPES or not src.get("data"):
            return _bad(f"{where}.source: invalid image source")
    if kind == "thinking" and not b.get("signature"):
        return _bad(f"{where}.signature: Field required")
    if kind == "tool_result" and isinstance(b.get("content"), list):
        for j, inner in enumerate(b["content"]):
            if not isinstance(inner, dict) or inner.get("type") not in ("text", "image"):
                return _bad(f"{where}.content.{j}: tool_result content must be text or image blocks")
            problem = _check_block(inner, f"{where}.content.{j}", "user")
            if problem:
                return problem
    return None


def _blocks(msg: dict[str, Any]) -> list[Any]:
    c = msg.get("content")
    return [{"type": "text", "text": c}] if isinstance(c, str) else (c if isinstance(c, list) else [])


def _check_pairing(msgs: list[dict[str, Any]]) -> Problem | None:
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        ids = [b["id"] for b in _blocks(m) if b.get("type") == "tool_use"]
        if not ids:
            continue
        nxt = _blocks(msgs[i + 1]) if i + 1 < len(msgs) else []
        got = [b.get("tool_use_id") for b in nxt if b.get("type") == "tool_result"]
        missing = [x for x in ids if x not in got]
        if missing:
            return _bad(f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                        f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                        "`tool_result` block in the next message.")
        kinds = [b.get("type") for b in nxt]
        if "tool_result" in kinds[len(got):] or kinds[: len(got)] != ["tool_result"] * len(got):
            return _bad(f"messages.{i + 1}: `tool_result` blocks must come first in the message")
    for i, m in enumerate(msgs):
        prev_ids = {b.get("id") for b in _blocks(msgs[i - 1]) if b.get("type") == "tool_use"} if i else set()
        for j, b in enumerate(_blocks(m)):
            if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_ids:
                return _bad(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message.")
    return None


def _check_messages(msgs: Any) -> Problem | None:
    if not isinstance(msgs, list) or not msgs:
        return _bad("messages: at least one message is required")
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLE_BLOCKS:
            return _bad(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if (i == 0 and role != "user") or (i and msgs[i - 1].get("role") == role):
            return _bad(f"messages.{i}: roles must alternate between \"user\" and \"assistant\", "
                        "starting with \"user\"")
        blocks = _blocks(m)
        if not blocks and not (role == "assistant" and i == len(msgs) - 1):
            return _bad(f"messages.{i}: all messages must have non-empty content")
        for j, b in enumerate(blocks):
            problem = _check_block(b, f"messages.{i}.content.{j}", role)
            if problem:
                return problem
    return _check_pairing(msgs)


def _check_tools(tools: Any) -> Problem | None:
    if not isinstance(tools, list):
        return _bad("tools: Input should be a valid list")
    names = set()
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or not TOOL_NAME.match(str(t.get("name", ""))):
            return _bad(f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        if t["name"] in names:
            return _bad(f"tools: Tool names must be unique ({t['name']})")
        names.add(t["name"])
        if not isinstance(t.get("input_schema"), dict) or t["input_schema"].get("type") != "object":
            return _bad(f"tools.{i}.input_schema: must be a JSON schema of type object")
        extra = set(t) - {"name", "description", "input_schema", "cache_control", "type"}
        if extra:
            return _bad(f"tools.{i}.{sorted(extra)[0]}: Extra inputs are not permitted")
    return None


def _check_thinking(body: dict[str, Any], headers: dict[str, str]) -> Problem | None:
    cfg = body.get("thinking")
    if not cfg or cfg.get("type") != "enabled":
        return None
    budget = cfg.get("budget_tokens", 0)
    if budget < 1024:
        return _bad("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if budget >= body["max_tokens"] and "interleaved-thinking" not in headers.get("anthropic-beta", ""):
        return _bad("`max_tokens` must be greater than `thinking.budget_tokens`")
    msgs = body["messages"]
    last = _blocks(msgs[-1])
    if len(msgs) >= 2 and any(b.get("type") == "tool_result" for b in last):
        first = (_blocks(msgs[-2]) or [{}])[0].get("type")
        if first not in ("thinking", "redacted_thinking"):
            return _bad(f"messages.{len(msgs) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                        f"found `{first}`. When `thinking` is enabled, a final `assistant` message must start with "
                        "a thinking block.")
    return None


def validate_request(body: dict[str, Any], headers: dict[str, str]) -> Problem | None:
    """None if the real API would accept the request, else (status, error type, message)."""
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return _bad(f"{key}: Field required")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return _bad("max_tokens: Input should be greater than or equal to 1")
    problem = _check_messages(body["messages"])
    if problem:
        return problem
    if "tools" in body and (problem := _check_tools(body["tools"])):
        return problem
    uses_tools = any(b.get("type") in ("tool_use", "tool_result") for m in body["messages"] for b in _blocks(m))
    if uses_tools and not body.get("tools"):
        return _bad("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    markers = sum(1 for _, seg in _segments(body) if isinstance(seg, dict) and "cache_control" in seg)
    if markers > 4:
        return _bad(f"A maximum of 4 blocks with cache_control may be provided. Found {markers}.")
    return _check_thinking(body, headers)


def _image_tokens(block: dict[str, Any]) -> int:
    """What the API bills for an image: width * height / 750, after it scales the image to <= ~1.15 MP."""
    try:
        w, h = Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))).size
    except (KeyError, ValueError, OSError):
        return 1600
    return min(1600, max(1, w * h // 750))


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt size the way the API limits it: text by `estimate_tokens`, images by their pixels."""
    images = 0

    def strip(x: Any) -> Any:
        nonlocal images
        if isinstance(x, dict):
            if x.get("type") == "image":
                images += _image_tokens(x)
                return {"type": "image"}
            return {k: strip(v) for k, v in x.items()}
        return [strip(v) for v in x] if isinstance(x, list) else x

    text = strip({k: body.get(k) for k in ("tools", "system", "messages")})
    return estimate_tokens(text) + images


def prompt_too_long(body: dict[str, Any], maximum: int) -> Problem | None:
    """The API's 400 for a prompt beyond the model's context window (its exact wording)."""
    n = prompt_tokens(body)
    return _bad(f"prompt is too long: {n} tokens > {maximum} maximum") if n > maximum else None


def _segments(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The request in cache order (tools, system, messages), one entry per block."""
    segs: list[tuple[str, Any]] = [("tools", t) for t in body.get("tools") or []]
    system = body.get("system")
    segs += [("system", system)] if isinstance(system, str) else [("system", s) for s in system or []]
    for m in body.get("messages") or []:
        segs += [(m.get("role", ""), b) for b in _blocks(m)]
    return segs


def cache_usage(body: dict[str, Any], cache: set[str], min_tokens: int = 0, lookback: int = 20) -> tuple[int, int]:
    """(cache_creation_input_tokens, cache_read_input_tokens), updating `cache` like the API's prompt cache.

    The prefix up to each cache_control breakpoint is written; a read is the longest cached prefix ending at a
    breakpoint or at one of the `lookback` blocks before it (how the API finds the previous turn's entry).
    """
    h = hashlib.sha256(body.get("model", "").encode())
    chars = 0
    prefixes: list[tuple[str, int]] = []  # (hash, tokens) after each block
    breakpoints: list[int] = []
    for kind, seg in _segments(body):
        stripped = {k: v for k, v in seg.items() if k != "cache_control"} if isinstance(seg, dict) else seg
        piece = kind + _canon(stripped)
        h.update(piece.encode())
        chars += len(piece)
        prefixes.append((h.hexdigest(), chars // 4))
        if isinstance(seg, dict) and "cache_control" in seg:
            breakpoints.append(len(prefixes) - 1)
    points = [p for p in breakpoints if prefixes[p][1] >= min_tokens]
    if not points:
        return 0, 0
    read = 0
    for p in points:
        for q in range(p, max(-1, p - lookback - 1), -1):
            if prefixes[q][0] in cache:
                read = max(read, prefixes[q][1])
                break
    cache.update(prefixes[p][0] for p in points)
    return max(0, prefixes[points[-1]][1] - read), read
