"""The Slack emulator's fault injection: Web API rate limits answered the way Slack answers them.

Slack's documented behaviour (docs.slack.dev, "Rate limits"): a rate-limited Web API call gets HTTP 429 with a
`Retry-After` header giving the whole seconds to wait, and the body `{"ok": false, "error": "ratelimited"}`.
Tests switch that on per method, for a number of calls or for a while, to see whether the app waits and retries.
A slash command's or click's response_url is limited only when named (`rate_limit("response_url")`), with
HTTP 429 and Retry-After as Slack's webhooks answer.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass
class RateLimit:
    """One injected limit: which methods, until when (monotonic) or for how many more calls, what Retry-After."""

    methods: frozenset[str] | None  # None: every Web API method
    until: float | None
    remaining: int | None
    retry_after: int

    def applies(self, method: str, now: float) -> bool:
        if (method not in self.methods) if self.methods is not None else method == "response_url":
            return False
        if self.until is not None and now >= self.until:
            return False
        return self.remaining is None or self.remaining > 0


class FaultInjection:
    """Mixed into SlackEmulator: `rate_limit(...)` makes matching calls fail with a real 429 until it runs out."""

    _faults_lock = threading.Lock()

    def _init_faults(self) -> None:
        self.rate_limits: list[RateLimit] = []

    def rate_limit(self, *methods: str, calls: int | None = None, seconds: float | None = None,
                   retry_after: int = 1) -> RateLimit:
        """429 `methods` (all Web API methods when none are named) for the next `calls` requests and/or
        `seconds` seconds; with neither, until `clear_faults()`. `retry_after` is whole seconds, as Slack sends."""
        limit = RateLimit(frozenset(methods) if methods else None,
                          time.monotonic() + seconds if seconds is not None else None, calls, max(0, int(retry_after)))
        with self._faults_lock:
            self.rate_limits.append(limit)
        return limit

    def clear_faults(self) -> None:
        with self._faults_lock:
            self.rate_limits.clear()

    def take_rate_limit(self, method: str) -> int | None:
        """Retry-After seconds when this call is rate limited (the limit's count goes down), else None."""
        now = time.monotonic()
        with self._faults_lock:
            for limit in self.rate_limits:
                if limit.applies(method, now):
                    if limit.remaining is not None:
                        limit.remaining -= 1
                    return limit.retry_after
        return None
