"""Signed event webhooks: every event of the event log POSTed to the operator's URL, in id order, none lost.

The sender follows the event log (a listener): each event it records, posted to Slack or held back (muted, quiet
hours, cooldown, marked `held`), is owed to the receiver under its log id. The router hands over the alert itself
too (as a sink after its clip, and `held()` for held ones), so a post carries the frame and clip when it can.

Posting never delays the other sinks: one worker posts in id order, signed (`signing.py`). Events that come faster
than `min_interval_seconds` apart, or while a post is under way, go together in the next post (`body.py`: a batch,
`events: [...]`, at most `batch_max`), never dropped. 5xx, 429 (Retry-After honoured), timeouts and refused
connections are retried with backoff for as long as it takes; a receiver that refuses a batch (400/413/422) gets
its events one per post, and one it refuses alone is passed (said in the log). The owed events beyond
`queue_size` wait in the event log, not in memory (`backlog.py`), and the id delivered last is kept on disk, so a
restart sends what the last run could not. Delivery is at least once: a post the receiver took but whose answer
was lost is sent again, under the same ids.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import aiohttp

from bot.media.reach import ReachError, check_reach, origin
from bot.media.redaction import redact
from bot.monitoring.webhooks.backlog import Backlog, Pending
from bot.monitoring.webhooks.body import alert_record, event_body, post_body
from bot.monitoring.webhooks.signing import signed_headers

if TYPE_CHECKING:
    from bot.config.settings import Settings, WebhookConfig
    from bot.monitoring.alerts import Alert
    from bot.monitoring.events_log import EventLog

log = logging.getLogger(__name__)

MAX_REDIRECTS = 3
MAX_BACKOFF = 60.0  # seconds; also the cap on a Retry-After we honour
RETRY_STATUS = frozenset({408, 425, 429}) | frozenset(range(500, 600))
REFUSED_BODY = frozenset({400, 413, 422})  # the receiver refuses this body: a batch is split, a lone event passed


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
    """The sink: `router.add_sink(sender, after_clip=True)`, `router.observe_held(sender.held)`, `bind(loop)`;
    `await sender.close()` at shutdown. With `events` (the runtime's) it sends the event log; without, what it is
    offered (tests, tools): then memory is all it has, and a full queue drops."""

    def __init__(self, config: WebhookConfig, api_base: str | None = None, *, backoff: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, events: EventLog | None = None,
                 cursor: Path | None = None) -> None:
        if not config.url:
            raise ValueError("webhook.url is not set")
        self.config, self.url = config, config.url
        self.api_base = api_base.rstrip("/") if api_base else None  # frame URLs point at the REST API
        self.secret = config.token.get_secret_value() if config.token else None
        self.backoff, self._clock, self.events = backoff, clock, events
        self.backlog = Backlog(config.queue_size, events, cursor, config.url, clock, config.inline_frames)
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_post = float("-inf")
        self._closed = False
        self.stats = {"sent": 0, "posts": 0, "attempts": 0, "failed": 0, "refused": 0, "queue_full": 0}
        if events is not None:
            events.add_listener(self._logged)

    # what comes in (any thread) -----------------------------------------------
    async def __call__(self, alert: Alert, channel: str | None) -> None:
        self.offer(alert)

    def where(self, channel: str | None) -> str:
        """Every alert comes here, whatever its channel: named by its origin (a path may hold a secret)."""
        return f"the webhook at {origin(self.url) or redact(self.url)}"

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the worker runs on; events from pipeline threads are handed to it. Starts sending what an earlier
        run left owed."""
        self._loop = loop
        loop.call_soon_threadsafe(self._kick)

    def held(self, alert: Alert, reason: str) -> None:
        """A held event (router.observe_held), marked `held`; callable from any thread."""
        self._on_loop(self.offer, alert, reason)

    def _logged(self, ev: dict[str, Any]) -> None:
        """The event log's listener (the appending thread): the event is owed."""
        self._on_loop(self._heard, ev)

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # not bound yet: what the log holds is sent from the cursor once it is
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    # on the loop ------------------------------------------------------------
    def offer(self, alert: Alert, held: str | None = None) -> str:
        """The alert of an event: with the event log, it joins its event (frame, clip); without, it is the event.
        'queued', or 'full' when a sender without a log has no room left."""
        if self.events is not None:
            self.backlog.enrich(alert)
            self._kick()
            return "queued"
        if not self.backlog.local(alert_record(alert, held), alert):
            self.stats["queue_full"] += 1
            log.warning("webhook queue full (%d): an event from %s dropped; is %s answering?", self.config.queue_size,
                        alert.camera, redact(self.url))
            return "full"
        self._kick()
        return "queued"

    def _heard(self, ev: dict[str, Any]) -> None:
        self.backlog.heard(ev)
        self._kick()

    def _kick(self) -> None:
        if self._closed:  # a call from a pipeline thread that was already on its way
            return
        self._wake.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._run(), name="webhooks")

    # delivery (the worker task) -------------------------------------------
    async def _run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_seconds)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                batch = await self._next_batch()
                try:
                    await self._send(session, batch)
                except asyncio.CancelledError:
                    raise
                except Exception:  # the worker must outlive any one post; the events stay owed
                    log.exception("webhook delivery failed")
                    self.backlog.put_back(batch)
                    await asyncio.sleep(self.backoff)
                    continue
                self._last_post = self._clock()
                await self.backlog.done(batch)

    async def _next_batch(self) -> list[Pending]:
        """The next events to post, once the last post is `min_interval_seconds` old (what arrives meanwhile joins)."""
        while True:
            self._wake.clear()
            if self.backlog.needs_refill():
                await self.backlog.refill()
            timeout: float | None = None
            if self.backlog.owed:
                gap = self._last_post + self.config.min_interval_seconds - self._clock()
                if gap > 0:
                    await asyncio.sleep(gap)
                    continue
                batch, ready_at = self.backlog.take(self.config.batch_max)
                if batch:
                    return batch
                timeout = max(0.01, ready_at - self._clock()) if ready_at is not None else 0.05
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass

    async def _send(self, session: aiohttp.ClientSession, batch: list[Pending]) -> None:
        """POST the batch until the receiver takes it; one it refuses goes again one event per post."""
        inline = self.config.inline_frames
        events = [event_body(p.event, p.alert, inline=inline, api_base=self.api_base, dropped=p.dropped)
                  for p in batch]
        if await self.deliver(session, post_body(events)):
            self.stats["sent"] += len(batch)
        elif len(batch) > 1:
            for one in batch:
                await self._send(session, [one])
        else:
            self.stats["refused"] += 1
            log.warning("webhook %s refused event %s (%s); passed: fix the receiver (it is in GET /api/events)",
                        redact(self.url), events[0].get("id"), events[0].get("event_type"))

    async def deliver(self, session: aiohttp.ClientSession, payload: dict[str, Any]) -> bool:
        """POST one body until the receiver answers 2xx (True) or refuses the body itself (False, 400/413/422). Every
        other failure is retried with backoff, for as long as it takes: the events wait, none is dropped."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        delivery = uuid.uuid4().hex  # the same across retries: receivers can drop a repeat they already took
        attempt = 0
        while True:
            attempt += 1
            self.stats["attempts"] += 1
            wait, done = await self._attempt(session, body, delivery)
            if done is not None:
                self.stats["posts"] += 1 if done else 0
                return done
            self.stats["failed"] += 1
            if attempt == self.config.max_attempts:
                log.warning("webhook %s has not taken a post in %d tries: its events wait (nothing is dropped) and "
                            "are retried every %.0f s at most; is it answering?", redact(self.url), attempt,
                            MAX_BACKOFF)
            await asyncio.sleep(min(MAX_BACKOFF, wait if wait is not None else self.backoff * 2 ** min(attempt - 1, 16)))

    async def _attempt(self, session: aiohttp.ClientSession, body: bytes,
                       delivery: str) -> tuple[float | None, bool | None]:
        """(Retry-After wait or None, True taken / False body refused / None to retry)."""
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
                    if status in REFUSED_BODY:
                        return None, False
                    if status in RETRY_STATUS:
                        log.info("webhook %s answered %d; retrying", redact(url), status)
                        return (retry_after(resp.headers.get("Retry-After")) if status == 429 else None), None
                    log.warning("webhook %s answered %d: fix the receiver or webhook.url/token; its events wait and "
                                "are retried", redact(url), status)
                    return None, None
            log.warning("webhook %s redirected more than %d times; retrying later", redact(self.url), MAX_REDIRECTS)
            return None, None
        except ReachError as exc:
            log.warning("webhook redirect refused: %s; its events wait and are retried", exc)
            return None, None
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
        """Wait up to `timeout` s until nothing is owed (tests, shutdown); True if so."""
        end = time.monotonic() + timeout
        while self.backlog.owed:
            if time.monotonic() >= end:
                return False
            await asyncio.sleep(0.02)
        return True

    async def close(self) -> None:
        """Stop posting; what is still owed stays in the event log for the next start (the cursor is on disk)."""
        self._closed = True
        if self.events is not None:
            self.events.remove_listener(self._logged)
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


def from_settings(settings: Settings, events: EventLog | None = None,
                  cursor: Path | None = None) -> WebhookSender | None:
    """The sender for webhook.url, following `events` (the event log) from `cursor` (where it keeps the id it
    delivered last); None when no URL is configured."""
    if not settings.webhook.url:
        return None
    if settings.webhook.token is None:
        log.warning("webhook %s is not signed: set VISION_AGENT_WEBHOOK_TOKEN", redact(settings.webhook.url))
    return WebhookSender(settings.webhook, api_base(settings), events=events, cursor=cursor)
