"""Claude client on the raw anthropic SDK: prompt-cache markers, thinking, retries, time bounds, usage and a
daily cost cap that holds under concurrency."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from bot.llm.budget import TOTAL, Payer, caps, over_line
from bot.llm.errors import NO_KEY, LLMBudgetExceeded, LLMError, LLMTimeout, LLMUnavailable, PromptTooLong, timeout_line
from bot.llm.send import TextSink, sdk_timeout, send
from bot.llm.tokens import prompt_tokens
from bot.llm.usage import UsageTracker

__all__ = ["LLMBudgetExceeded", "LLMClient", "LLMError", "LLMResponse", "LLMTimeout", "LLMUnavailable",
           "PromptTooLong", "ToolCall", "WaitBudget"]

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
    """A copy of the tool definitions with cache_control on the last one (they open the cached prefix); input untouched."""
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


class WaitBudget:
    """The seconds one turn may still wait for the model; every call of the turn (summaries too) spends it."""

    def __init__(self, seconds: float) -> None:
        self.total = self.left = seconds


class LLMClient:
    """Async Claude client. One instance per process; usage is tracked per session key and per day."""

    def __init__(
        self,
        settings: Settings,
        usage_path: Path | None = None,
        *,
        retry_base_delay: float = 1.0,
        stream: bool = True,
    ) -> None:
        self.settings = settings
        self.model = settings.llm.model
        self.usage = UsageTracker(self.model, usage_path)
        self.retry_base_delay = retry_base_delay
        self.stream = stream
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _api_key(self) -> str:
        key: SecretStr | str | None = self.settings.llm.api_key  # a str when settings were built without validation
        return (key.get_secret_value() if isinstance(key, SecretStr) else key or "").strip()

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
                raise LLMUnavailable(NO_KEY)
            import anthropic

            # Retries are ours (send); the SDK's timeout bounds each attempt's silence (its default is 600 s).
            kwargs: dict[str, Any] = {"api_key": self._api_key(), "max_retries": 0,
                                      "timeout": sdk_timeout(self.settings.llm.request_timeout)}
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
        budget: WaitBudget | None = None,
        on_text: TextSink | None = None,
        payer: Payer | None = None,
    ) -> LLMResponse:
        """Send one request; retries transient failures; raises LLMError subclasses with one-line messages.

        The call waits at most `budget.left` seconds (default llm.turn_timeout) in all, then raises LLMTimeout.
        `on_text` receives the answer's text as it is generated (None: a retry voids what came so far).
        `payer`: whose shares of the daily budget the call counts on (bot/llm/budget.py); None: the total only.
        """
        client = self._sdk()
        req = self.build_request(messages, tools, system, max_tokens, thinking, cache_history)
        held = self.usage.worst_case(prompt_tokens(req["messages"], system, tools), req["max_tokens"])
        limit = self.settings.llm.cost_limit_daily
        lines = {TOTAL: limit} if payer is None else caps(payer, limit, self.settings.llm)
        message = await self._bounded(client, req, held, budget or WaitBudget(self.settings.llm.turn_timeout),
                                      on_text, lines)
        resp = parse_response(message)
        resp.cost = self.usage.settle(held, resp.usage, session_key, list(lines), write=False)
        # The figures changed at once; the file (write + fsync) off the event loop, and it holds the call on return.
        await asyncio.to_thread(self.usage.save)
        return resp

    async def _bounded(self, client: Any, req: dict[str, Any], held: float, budget: WaitBudget,
                       on_text: TextSink | None, lines: dict[str, float]) -> Any:
        """The SDK message, within the budget; `held` is reserved for the call and given back if it fails."""
        cfg = self.settings.llm
        if budget.left <= 0:
            raise LLMTimeout(timeout_line(budget.total))
        start = time.monotonic()
        try:
            async with asyncio.timeout(budget.left):
                await self._reserve(held, lines)
                try:
                    return await send(client, req, stream=self.stream, retries=cfg.max_retries,
                                      base_delay=self.retry_base_delay, silence=cfg.request_timeout,
                                      model=self.model, on_text=on_text)
                except BaseException:
                    self.usage.release(held, list(lines))
                    raise
        except TimeoutError:
            raise LLMTimeout(timeout_line(budget.total)) from None
        finally:
            budget.left -= time.monotonic() - start

    async def aclose(self) -> None:
        """Close the HTTP connection pool (call before the event loop ends)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _reserve(self, cost: float, lines: dict[str, float]) -> None:
        while not self.usage.reserve(cost, lines):
            if (full := self.usage.over(lines)) is not None:
                raise LLMBudgetExceeded(over_line(full, self.usage.spent(full), lines[full],
                                                  self.settings.llm.cost_limit_daily))
            # Replies in progress hold the rest of today's budget: wait for them to settle instead of refusing.
            await asyncio.sleep(0.05)
