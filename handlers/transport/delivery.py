"""Getting writes to Slack under Slack's real failure modes: 429s, resets, 5xx (a channel's order: bot/monitoring/lanes.py).

Retries are slack_sdk's own handlers (they honour Retry-After); they sit on the one AsyncWebClient, and from
there on every client the bot uses: Bolt copies them into each listener's `client`, the socket-mode client
opens connections through it, and `files_upload_v2` sends all three of its requests (and the upload) through it.
`respond()` (response_url) is the one write Bolt sends through a client of its own: RetryingRespond replaces it.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.context.respond.internals import _build_message
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.webhook.async_client import AsyncWebhookClient, WebhookResponse

log = logging.getLogger(__name__)

# Slack's Retry-After is whole seconds, usually 1–30 under a burst; 8 waits ride out a minute-long storm
# without holding a turn forever. Each wait is what Slack asked for (plus < 1 s of jitter), never a guess.
RATE_LIMIT_RETRIES = 8
# A reset or refused connection is over in moments; a 500/503 from Slack usually too. A few tries each.
CONNECTION_RETRIES = 3
SERVER_ERROR_RETRIES = 2


def retry_handlers() -> list[AsyncRetryHandler]:
    """The retry policy of every Slack Web API client the bot builds (pass as `retry_handlers=`)."""
    return [
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
        AsyncServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
    ]


class RetryingRespond(AsyncRespond):
    """Bolt's `respond()` with the same retry policy. Bolt's own posts to the response_url through a webhook
    client without retries, and a 429 there comes back as a status, not an error: the reply was silently lost."""

    async def __call__(self, text: str | dict[str, Any] = "", **fields: Any) -> WebhookResponse:  # type: ignore[override]
        if self.response_url is None:
            raise ValueError("respond is unsupported here as there is no response_url")
        message = _build_message(**text) if isinstance(text, dict) else _build_message(text=text, **fields)
        client = AsyncWebhookClient(url=self.response_url, proxy=self.proxy, ssl=self.ssl,
                                    retry_handlers=retry_handlers())
        resp = await client.send_dict(message)
        if resp.status_code != 200:
            log.warning("response_url answered HTTP %s: the ephemeral reply was not shown", resp.status_code)
        return resp
