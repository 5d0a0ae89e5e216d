"""One model answer over the wire: stream it, bound each attempt's silence, retry what is transient."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

import httpx

from bot.llm.errors import (
    MAX_RETRY_DELAY,
    RETRY_STATUSES,
    LLMError,
    LLMTimeout,
    retry_after,
    status_error,
    timeout_line,
)

log = logging.getLogger(__name__)


def sdk_timeout(seconds: float) -> httpx.Timeout:
    """The SDK client's timeout: `seconds` of silence per read (also between stream events), a quicker connect."""
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


# Receives each piece of answer text as it arrives; None means "the attempt failed, what came so far is void".
TextSink = Callable[[str | None], None]


async def _call(client: Any, req: dict[str, Any], stream: bool, on_text: TextSink | None = None) -> Any:
    # Streaming is the default: a read timeout then means "the API went silent", so a long answer that keeps
    # arriving is never cut, while a hung reply or a stream that stalls mid-way fails within the timeout.
    if on_text is None and not stream and req["max_tokens"] <= 16_000:
        return await client.messages.create(**req)
    async with open_stream(client, req) as events:
        if on_text is not None:
            async for event in events:
                if event.type == "text" and event.text:
                    on_text(event.text)
        return await events.get_final_message()


def open_stream(client: Any, req: dict[str, Any]) -> Any:
    """What `client.messages.stream(**req)` returns, without the SDK's walk of the body against its typed schema
    (anthropic 0.49 `maybe_transform`: 10-60 ms of the event loop for a long history with 50 tools, and 50 turns at
    once stack it in front of every ack and first step). The walk renames and reformats nothing in a body of plain
    JSON, as ours are (`LLMClient.build_request`): the same bytes go out (tests/bot/llm/test_stream_body.py holds the
    SDK's own walk to that, so a newer SDK that starts to transform fails there)."""
    from anthropic import AsyncStream
    from anthropic._base_client import make_request_options
    from anthropic.lib.streaming import AsyncMessageStreamManager
    from anthropic.types import Message, RawMessageStreamEvent

    body = {key: value for key, value in req.items() if key != "extra_headers"}
    headers = {"X-Stainless-Stream-Helper": "messages", **(req.get("extra_headers") or {})}
    request = client.post("/v1/messages", body={**body, "stream": True}, cast_to=Message,
                          options=make_request_options(extra_headers=headers), stream=True,
                          stream_cls=AsyncStream[RawMessageStreamEvent])
    return AsyncMessageStreamManager(request)


def _backoff(attempt: int, base_delay: float) -> float:
    base = base_delay * (2**attempt)
    return min(MAX_RETRY_DELAY, base + random.uniform(0, base / 4))


async def send(client: Any, req: dict[str, Any], *, stream: bool, retries: int, base_delay: float,
               silence: float, model: str, on_text: TextSink | None = None) -> Any:
    """The SDK Message for `req`; transient failures are retried; raises LLMError with one line.

    `on_text` gets the answer's text as it streams, and None before a retry (the text so far is void)."""
    import anthropic

    for attempt in range(retries + 1):
        if attempt and on_text is not None:
            on_text(None)
        try:
            return await _call(client, req, stream, on_text)
        except anthropic.APIStatusError as exc:
            if exc.status_code not in RETRY_STATUSES or attempt == retries:
                raise status_error(exc, attempt, model) from None
            delay = retry_after(exc) or _backoff(attempt, base_delay)
            log.warning("Anthropic API %s; retry %d/%d in %.1fs", exc.status_code, attempt + 1, retries, delay)
        except (anthropic.APITimeoutError, httpx.TimeoutException):  # a stalled stream raises httpx's own
            if attempt == retries:
                raise LLMTimeout(timeout_line(silence, attempt + 1)) from None
            delay = _backoff(attempt, base_delay)
            log.warning("Anthropic API silent for %.0fs; retry %d/%d in %.1fs", silence, attempt + 1, retries, delay)
        except (anthropic.APIConnectionError, httpx.TransportError) as exc:
            if attempt == retries:
                raise LLMError(
                    f"cannot reach the Anthropic API ({type(exc).__name__}) after {attempt + 1} attempts; "
                    "check the network or ANTHROPIC_BASE_URL"
                ) from None
            delay = _backoff(attempt, base_delay)
            log.warning("Anthropic API unreachable; retry %d/%d in %.1fs", attempt + 1, retries, delay)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")
