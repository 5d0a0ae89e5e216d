"""Claude client on the raw anthropic SDK: prompt-cache markers, thinking, retries, usage and a daily cost cap."""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.llm_errors import (
    MAX_RETRY_DELAY,
    RETRY_STATUSES,
    LLMBudgetExceeded,
    LLMError,
    LLMUnavailable,
    retry_after,
    status_error,
)
from bot.usage import UsageTracker

__all__ = ["LLMBudgetExceeded", "LLMClient", "LLMError", "LLMResponse", "LLMUnavailable", "ToolCall"]

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger(__name__)

THINKING_BETA = "interleaved-thinking-2025-05-14"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass
class LLMResponse:
    """One model reply. content_blocks are plain dicts, ready to append to history (thinking kept)."""

    content_blocks: list[dict[str, Any]]
    text: str
    tool_calls: list[ToolCall]
    stop_reason: str
    usage: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0

    @property
    def thinking(self) -> list[str]:
        return [b.get("thinking", "") for b in self.content_blocks if b.get("type") == "thinking"]


def with_last_tool_cached(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of the tool definitions with cache_control on the last one (seed 7.1); the input is untouched."""
    out = [dict(t) for t in tools]
    if out:
        out[-1]["cache_control"] = {"type": "ephemeral"}
    return out


def with_history_cached(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of messages with cache_control on the last block of the last message.

    The next call of a tool loop (or the next turn within the cache lifetime) then reads the whole history
    from the cache instead of paying full price for it again. Only that message and block are copied.
    """
    if not messages or messages[-1].get("role") != "user":
        return messages
    last = dict(messages[-1])
    content = last.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    if not blocks or blocks[-1].get("type") not in ("text", "image", "tool_result"):
        return messages
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    last["content"] = blocks
    return [*messages[:-1], last]


def parse_response(message: Any) -> LLMResponse:
    """An SDK Message -> LLMResponse with content blocks as plain dicts."""
    blocks = [b.model_dump(mode="json", exclude_none=True) for b in message.content]
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text")).strip()
    calls = [ToolCall(b["id"], b["name"], b.get("input") or {}) for b in blocks if b.get("type") == "tool_use"]
    u = message.usage
    usage = {
        "input_tokens": u.input_tokens or 0,
        "output_tokens": u.output_tokens or 0,
        "cache_creation_input_tokens": getattr(u, "cache_creation_input_tokens", None) or 0,
        "cache_read_input_tokens": getattr(u, "cache_read_input_tokens", None) or 0,
    }
    return LLMResponse(blocks, text, calls, message.stop_reason or "end_turn", usage)


class LLMClient:
    """Async Claude client. One instance per process; usage is tracked per session key and per day."""

    def __init__(
        self,
        settings: Settings,
        usage_path: Path | None = None,
        *,
        retry_base_delay: float = 1.0,
        stream: bool = False,
    ) -> None:
        self.settings = settings
        self.model = settings.llm.model
        self.usage = UsageTracker(self.model, usage_path)
        self.retry_base_delay = retry_base_delay
        self.stream = stream
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _api_key(self) -> str:
        key = self.settings.llm.api_key
        return (key.get_secret_value() if hasattr(key, "get_secret_value") else str(key or "")).strip()

    @property
    def available(self) -> bool:
        """True when an API key is configured (it may still be rejected by the API)."""
        return bool(self._api_key())

    def _sdk(self) -> Any:
        loop = asyncio.get_running_loop()
        # httpx pools are bound to the loop that made them; a second asyncio.run() needs a fresh client.
        if self._client is None or self._client_loop is not loop:
            self._client_loop = loop
            if not self.available:
                raise LLMUnavailable(
                    "no Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...) "
                    "and start again"
                )
            import anthropic

            kwargs: dict[str, Any] = {"api_key": self._api_key(), "max_retries": 0}
            if self.settings.llm.base_url:
                kwargs["base_url"] = self.settings.llm.base_url
            self._client = anthropic.AsyncAnthropic(**kwargs)
        return self._client

    def build_request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        system: list[dict[str, Any]],
        max_tokens: int | None = None,
        thinking: bool | None = None,
        cache_history: bool = True,
    ) -> dict[str, Any]:
        """The keyword arguments for messages.create (exposed so the prefix benchmark can inspect them)."""
        cfg = self.settings.llm
        req: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or cfg.max_tokens,
            "system": system,
            "messages": with_history_cached(messages) if cache_history else messages,
        }
        if tools:
            req["tools"] = with_last_tool_cached(tools)
        use_thinking = cfg.thinking.enabled if thinking is None else thinking
        if use_thinking:
            budget = cfg.thinking.budget_tokens
            # The API wants max_tokens > budget_tokens; leave room for the visible answer too.
            req["max_tokens"] = max(req["max_tokens"], budget + 1024)
            req["thinking"] = {"type": "enabled", "budget_tokens": budget}
            req["extra_headers"] = {"anthropic-beta": THINKING_BETA}
        return req

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        system: list[dict[str, Any]],
        max_tokens: int | None = None,
        thinking: bool | None = None,
        *,
        session_key: str | None = None,
        cache_history: bool = True,
    ) -> LLMResponse:
        """Send one request; retries transient failures; raises LLMError subclasses with one-line messages."""
        self._check_budget()
        client = self._sdk()
        req = self.build_request(messages, tools, system, max_tokens, thinking, cache_history)
        message = await self._with_retries(client, req)
        resp = parse_response(message)
        resp.cost = self.usage.add(resp.usage, session_key)
        return resp

    async def aclose(self) -> None:
        """Close the HTTP connection pool (call before the event loop ends)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _check_budget(self) -> None:
        limit = self.settings.llm.cost_limit_daily
        spent = self.usage.today()["cost"]
        if spent >= limit:
            raise LLMBudgetExceeded(
                f"daily LLM budget of ${limit:.2f} reached (spent ${spent:.2f} today); "
                "raise llm.cost_limit_daily in config.yaml or wait until tomorrow"
            )

    async def _call(self, client: Any, req: dict[str, Any]) -> Any:
        # The SDK refuses non-streaming requests that may run > 10 min (large max_tokens): stream those.
        if not self.stream and req["max_tokens"] <= 16_000:
            return await client.messages.create(**req)
        async with client.messages.stream(**req) as stream:
            return await stream.get_final_message()

    async def _with_retries(self, client: Any, req: dict[str, Any]) -> Any:
        import anthropic

        retries = self.settings.llm.max_retries
        for attempt in range(retries + 1):
            try:
                return await self._call(client, req)
            except anthropic.APIStatusError as exc:
                if exc.status_code not in RETRY_STATUSES or attempt == retries:
                    raise status_error(exc, attempt, self.model) from None
                delay = retry_after(exc) or self._backoff(attempt)
                log.warning("Anthropic API %s; retry %d/%d in %.1fs", exc.status_code, attempt + 1, retries, delay)
            except anthropic.APIConnectionError as exc:
                if attempt == retries:
                    raise LLMError(
                        f"cannot reach the Anthropic API ({type(exc).__name__}) after {attempt + 1} attempts; "
                        "check the network or ANTHROPIC_BASE_URL"
                    ) from None
                delay = self._backoff(attempt)
                log.warning("Anthropic API unreachable; retry %d/%d in %.1fs", attempt + 1, retries, delay)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        base = self.retry_base_delay * (2**attempt)
        return min(MAX_RETRY_DELAY, base + random.uniform(0, base / 4))
