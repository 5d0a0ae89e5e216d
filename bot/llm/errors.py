"""LLM errors with one-line messages a user can act on, and how SDK errors map to them."""

from __future__ import annotations

import re
from typing import Any

RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}
MAX_RETRY_DELAY = 60.0


NO_KEY = ("ANTHROPIC_API_KEY is not set: run `export ANTHROPIC_API_KEY=sk-ant-...` (create a key at "
          "https://console.anthropic.com/settings/keys) and start again")  # the one "no model" line, every adapter


class LLMError(Exception):
    """An LLM call failed; str() is one line a user can act on."""


class LLMUnavailable(LLMError):
    """No API key (or the key was rejected): LLM features are off until it is fixed."""


class LLMBudgetExceeded(LLMError):
    """The daily cost cap is reached."""


class LLMTimeout(LLMError):
    """The model did not answer in time (an attempt stayed silent, or the turn's wait ran out)."""


class PromptTooLong(LLMError):
    """The API refused the prompt as longer than the context window; `tokens` is its count when it said."""

    def __init__(self, message: str, tokens: int | None = None) -> None:
        super().__init__(message)
        self.tokens = tokens


_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens|input length and `max_tokens` exceed context limit: (\d+)")


def timeout_line(seconds: float, attempts: int = 1) -> str:
    """The one line for a model that did not answer in time."""
    tries = f" ({attempts} attempts)" if attempts > 1 else ""
    return f"Claude did not answer within {seconds:.0f} s{tries}; try again in a minute"


def retry_after(exc: Any) -> float | None:
    """Seconds the API asked us to wait (retry-after-ms / retry-after headers), capped."""
    headers = getattr(exc.response, "headers", {}) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return min(MAX_RETRY_DELAY, max(0.0, float(raw) * scale))
        except ValueError:
            continue
    return None


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"]).splitlines()[0]
    return str(getattr(exc, "message", exc)).splitlines()[0]


def status_error(exc: Any, attempt: int, model: str) -> LLMError:
    """The LLMError for an SDK APIStatusError that will not be retried (again)."""
    status, msg = exc.status_code, _api_message(exc)
    if status in (401, 403):
        return LLMUnavailable(f"Anthropic rejected the API key ({status}: {msg}); check ANTHROPIC_API_KEY")
    if status == 404:
        return LLMError(f"Anthropic API 404 ({msg}); check the model name {model!r} (VISION_AGENT_MODEL)")
    if status == 400 and (m := _TOO_LONG.search(msg)):
        return PromptTooLong(f"this conversation no longer fits Claude's context window ({msg}); send your "
                             "message again (older turns are summarised first) or start a new thread",
                             int(m.group(1) or m.group(2)))
    if status in (400, 413, 422):
        return LLMError(f"Anthropic rejected the request ({status}: {msg})")
    tries = f" after {attempt + 1} attempts" if attempt else ""
    return LLMError(f"Anthropic API error {status}{tries} ({msg}); try again in a minute")
