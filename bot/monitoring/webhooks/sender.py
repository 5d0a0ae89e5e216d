"""Signed event webhooks: every tier-1 event POSTed as JSON to the operator's URL, off the alert path.

Sent alerts arrive as an AlertRouter sink; events the router held back (muted, quiet hours, cooldown) through
`held()` (router.observe_held), from any thread, marked with `held`: a receiver sees every event.

The sink only queues (bounded): a slow or dead endpoint never delays the other sinks (Slack, the CLI). One worker
posts in order, signed (`webhook_signing.py`), retrying 5xx, 429 (Retry-After honoured), timeouts and connection
errors with backoff, a bounded number of times. Within `dedupe_ttl_seconds` the same camera+rule+text is sent once;
an alert arriving less than `min_interval_seconds` after the last one accepted is dropped, and the next post says
how many were dropped.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import aiohttp

from bot.media.reach import ReachError, check_reach, origin
from bot.media.redaction import redact
from bot.monitoring.events_log import SOURCE, event_type_of
from bot.monitoring.webhooks.signing import signed_headers

if TYPE_CHECKING:
    from bot.config.settings import Settings, WebhookConfig
    from bot.monitoring.alerts import Alert

log = logging.getLogger(__name__)

MAX_REDIRECTS = 3
MAX_BACKOFF = 60.0  # seconds; also the cap on a Retry-After we honour
RETRY_STATUS = frozenset({408, 425, 429}) | frozenset(range(500, 600))


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class WebhookSender:
    """The sink: `router.add_sink(sender)`; `await sender.close()` at shutdown."""

    def __init__(self, config: WebhookConfig, api_base: str | None = None, *, backoff: float = 1.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if not config.url:
            raise ValueError("webhook.url is not set")
        self.config, self.url = config, config.url
        self.api_base = api_base.rstrip("/") if api_base else None  # frame URLs point at the REST API
        self.secret = config.token.get_secret_value() if config.token else None
        self.backoff, self._clock, self._sleep = backoff, clock, sleep
        self._seen: dict[tuple[str, str, str], float] = {}
        self._last_accepted: float | None = None
        self._dropped = 0  # throttled since the last post; the next post carries it
        self._queue: asyncio.Queue[dict[str, Any]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stats = {"sent": 0, "failed": 0, "duplicate": 0, "throttled": 0, "queue_full": 0, "attempts": 0}

    async def __call__(self, alert: Alert, channel: str | None) -> None:
        self.offer(alert)

    def where(self, channel: str | None) -> str:
        """Every alert comes here, whatever its channel: named by its origin (a path may hold a secret)."""
        return f"the webhook at {origin(self.url) or redact(self.url)}"

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the worker runs on; held events from pipeline threads are handed to it."""
        self._loop = loop

    def held(self, alert: Alert, reason: str) -> None:
        """A held event (router.observe_held): queued like a sent one, marked `held`; callable from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            self.offer(alert, reason)
        else:
            loop.call_soon_threadsafe(self.offer, alert, reason)

    # admission (on the loop, never waits) ---------------------------------
    def offer(self, alert: Alert, held: str | None = None) -> str:
        """Queue the alert unless duplicate / throttled / queue full; returns which ('queued' when queued)."""
        now = self._clock()
        key = (alert.camera, alert.rule, alert.text)
        ttl = self.config.dedupe_ttl_seconds
        self._seen = {k: t for k, t in self._seen.items() if now - t < ttl}  # bounded by what the TTL holds
        if key in self._seen:
            self.stats["duplicate"] += 1
            return "duplicate"
        last = self._last_accepted
        if last is not None and now - last < self.config.min_interval_seconds:
            self.stats["throttled"] += 1
            self._dropped += 1
            return "throttled"
        queue = self._ensure_worker()
        payload = self.payload(alert, held)
        try:
            queue.put_nowait(payload)
        except asyncio.QueueFull:
            self.stats["queue_full"] += 1
            log.warning("webhook queue full (%d): alert from %s dropped; is %s answering?", queue.maxsize,
                        alert.camera, redact(self.url))
            return "full"
        self._seen[key], self._last_accepted, self._dropped = now, now, 0
        return "queued"

    def payload(self, alert: Alert, held: str | None = None) -> dict[str, Any]:
        """The JSON body (credentials redacted from every text field). `held`: why the event was not sent to
        Slack (its frame was not kept: inline only); null for a sent alert."""
        body: dict[str, Any] = {
            "source": SOURCE, "event_type": event_type_of(alert.rule), "camera": redact(alert.camera),
            "rule": redact(alert.rule), "text": redact(alert.text), "counts": dict(alert.counts),
            "time": alert.time, "pipeline_id": alert.pipeline_id,
            "summary": redact(alert.summary) if alert.summary else None, "dropped_before": self._dropped,
            "alert_id": alert.alert_id, "held": held, "frame_url": None, "clip_url": None,
        }
        if alert.frame and self.config.inline_frames:
            body["frame_base64"], body["frame_type"] = base64.b64encode(alert.frame).decode(), "image/jpeg"
        elif alert.frame and self.api_base and not held:  # this alert's own frame (the router kept it)
            body["frame_url"] = f"{self.api_base}/api/alerts/{alert.alert_id}/frame"
        if alert.clip_path and self.api_base:  # the MP4 around the event (bot/api/frames.py clip)
            body["clip_url"] = f"{self.api_base}/api/clips/{Path(alert.clip_path).stem}"
        return body

    def _ensure_worker(self) -> asyncio.Queue[dict[str, Any]]:
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=self.config.queue_size)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._run(self._queue), name="webhooks")
        return self._queue

    # delivery (the worker task) -------------------------------------------
    async def _run(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_seconds)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                payload = await queue.get()
                try:
                    ok = await self.deliver(session, payload)
                except Exception:  # the worker must outlive any one payload
                    log.exception("webhook delivery failed")
                    ok = False
                self.stats["sent" if ok else "failed"] += 1
                queue.task_done()

    async def deliver(self, session: aiohttp.ClientSession, payload: dict[str, Any]) -> bool:
        """POST one payload, retrying what may pass on a later try; True once the receiver answered 2xx."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        delivery = uuid.uuid4().hex  # the same across retries: receivers can drop a repeat they already took
        for attempt in range(1, self.config.max_attempts + 1):
            self.stats["attempts"] += 1
            wait, done = await self._attempt(session, body, delivery)
            if done is not None:
                return done
            if attempt < self.config.max_attempts:
                await self._sleep(min(MAX_BACKOFF, wait if wait is not None else self.backoff * 2 ** (attempt - 1)))
        log.warning("webhook to %s gave up after %d attempts", redact(self.url), self.config.max_attempts)
        return False

    async def _attempt(self, session: aiohttp.ClientSession, body: bytes,
                       delivery: str) -> tuple[float | None, bool | None]:
        """(Retry-After wait or None, True/False when finished or None to retry)."""
        url = self.url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                async with session.post(url, data=body, headers=signed_headers(self.secret, body, delivery),
                                        allow_redirects=False) as resp:
                    await resp.read()
                    status, location = resp.status, resp.headers.get("Location")
                    if status in (307, 308) and location:  # the only redirects that keep a POST a POST
                        url = await asyncio.to_thread(self._redirect, url, location)  # DNS off the loop
                        continue
                    if 200 <= status < 300:
                        return None, True
                    if status in RETRY_STATUS:
                        log.info("webhook %s answered %d; retrying", redact(url), status)
                        return (retry_after(resp.headers.get("Retry-After")) if status == 429 else None), None
                    log.warning("webhook %s answered %d; not retried (fix the receiver or the URL)",
                                redact(url), status)
                    return None, False
            log.warning("webhook %s redirected more than %d times", redact(self.url), MAX_REDIRECTS)
            return None, False
        except ReachError as exc:
            log.warning("webhook redirect refused: %s", exc)
            return None, False
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            log.info("webhook %s failed (%s); retrying", redact(url), type(exc).__name__)
            return None, None

    def _redirect(self, current: str, location: str) -> str:
        """Where a redirect may go: the configured URL's own origin, or public addresses only (not the LAN)."""
        target = urljoin(current, location)
        trusted = {o for o in (origin(self.url),) if o}
        check_reach(target, trusted, ("http", "https"))
        return target

    async def drain(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the queue to empty (tests, shutdown); True if it did."""
        if self._queue is None:
            return True
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            try:
                await worker
            except (asyncio.CancelledError, Exception):
                pass


def api_base(settings: Settings) -> str | None:
    """Where webhook receivers fetch frames: api.public_url, else the API's own address when it is on."""
    api = settings.api
    if api.public_url:
        return api.public_url
    port = api.port if api.port is not None else settings.slack.health_port
    if api.token is None or not port:
        return None
    host = api.host if api.port is not None else settings.slack.health_host
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"


def from_settings(settings: Settings) -> WebhookSender | None:
    """The sender for webhook.url, or None when no URL is configured."""
    if not settings.webhook.url:
        return None
    if settings.webhook.token is None:
        log.warning("webhook %s is not signed: set VISION_AGENT_WEBHOOK_TOKEN", redact(settings.webhook.url))
    return WebhookSender(settings.webhook, api_base(settings))
