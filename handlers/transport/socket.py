"""Socket mode that acks every envelope, Events API envelopes before they are dispatched, and keeps ordinary
reconnects out of the log.

Bolt acks only what a listener handled (status 200): an event type we do not listen to, a payload a listener
chokes on, or an envelope slack_sdk cannot parse stays unacked, and Slack sends it again three times. Here
everything is acked once, and what we did not handle is logged once at debug level.

An Events API envelope's ack is always empty (a listener cannot answer Slack through it), so it goes out before
Bolt's middleware and listener matching run, not after, and Bolt's work waits until every envelope read so far is
acked: with 50 threads starting at once, reading and acking an envelope no longer waits behind the dispatch of the
ones read before it (bench/slack_latency.py). Our own messages coming back and the message twin of an app_mention
are acked and never dispatched. Slash commands and interactive payloads still go through Bolt first: their ack may
carry a body (a reply, a view's response_action).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app, send_async_response
from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.response import BoltResponse
from slack_sdk.socket_mode.request import SocketModeRequest

from handlers.transport.owed import Owed

log = logging.getLogger(__name__)
socket_log = logging.getLogger("handlers.transport.socket.sdk")  # the SDK's socket client logs here, through QuietReconnects

MENTIONS_KEPT = 1000  # app_mentions remembered for their message twin (it comes within moments)
TWIN_SUBTYPES = (None, "file_share", "thread_broadcast")  # a person's message: the ones an app_mention has a twin of
QUIET_FOR = 60.0  # seconds a socket may be down (reconnecting) before it is worth a warning


def describe(body: Any) -> str:
    """A short, secret-free description of an envelope's payload for the debug log."""
    if not isinstance(body, dict):
        return f"payload of type {type(body).__name__}"
    event: dict[str, Any] = body["event"] if isinstance(body.get("event"), dict) else {}
    kind = event.get("type") or body.get("type") or body.get("command") or "?"
    return f"{kind!s:.60}" + (f"/{event['subtype']!s:.40}" if event.get("subtype") else "")


class AckGate(Owed):
    """Acks before feedback: Slack calls that can wait a moment (👀, a turn's first step) wait until every envelope
    read from the socket so far is acked, or `WAIT` at most.

    An ack is the one thing Slack times (it redelivers after 3 s); the feedback calls of a burst of threads would
    otherwise run between the envelopes' reads and acks (and fill Slack's side with calls while the acks are owed).
    """

    WAIT = 0.25  # seconds feedback waits at most for acks still owed
    POLL = 0.01  # the socket client's queue is not ours: nobody tells us when it empties
    taken, acked = Owed.owe, Owed.paid

    def __init__(self) -> None:
        super().__init__()
        self.queue: asyncio.Queue[Any] | None = None  # the socket client's queue of messages read, not yet handled

    @property
    def owed(self) -> int:
        """Envelopes being handled, not yet acked."""
        return self.count

    def waiting(self) -> bool:
        return bool(self.count or (self.queue is not None and self.queue.qsize()))

    async def wait(self, deadline: float | None = None) -> None:
        """Return once no ack is owed (checked again after each ack: the queue may hold more), or after WAIT (or at
        `deadline`, a loop time)."""
        await asyncio.sleep(0)  # envelopes just taken off the queue reach `taken` first (their tasks are ahead)
        await super().wait(deadline)


class AckingSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's socket-mode handler, but an Events API envelope is acked before it is dispatched, and any other
    envelope Bolt did not answer with 200 is acked with an empty body. `gate` learns which acks are owed."""

    def __init__(self, *args: Any, gate: AckGate | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = gate or AckGate()
        self.gate.queue = self.client.message_queue
        self.own_ids: set[str] = set()  # our bot user id and bot id (auth.test): our own messages come back as events
        self._mentions: OrderedDict[tuple[str, str], None] = OrderedDict()  # (channel, ts) of app_mentions dispatched
        self._held: list[tuple[SocketModeRequest, float]] = []  # acked, not yet dispatched (with a loop-time bound)
        self._dispatcher: asyncio.Task[None] | None = None  # dispatches `_held` once the acks owed are out
        self._dispatches: set[asyncio.Task[None]] = set()  # dispatches running (kept from garbage collection)

    def own_message(self, payload: Any) -> bool:
        """A message event of our own (each post or streamed message comes back as one): Bolt's self-event
        middleware would drop it after building a request and running the middleware before it; dropped here."""
        event = payload.get("event") if isinstance(payload, dict) else None
        if not isinstance(event, dict) or event.get("type") != "message" or not self.own_ids:
            return False
        inner: dict[str, Any] = event["message"] if isinstance(event.get("message"), dict) else {}
        return any(isinstance(v, str) and v in self.own_ids for v in (event.get("user"), event.get("bot_id"),
                                                                       inner.get("user"), inner.get("bot_id")))

    def mention_twin(self, payload: Any) -> bool:
        """The message event Slack sends beside an app_mention already dispatched (message.channels / .groups carry
        the same message, same channel and ts): the listener would drop it at its dedupe, after Bolt built a request
        and ran its middleware for it, half the dispatch work of a burst of mentions. Dropped here instead. A message
        event that comes first still goes through (the listener then drops the app_mention), as do edits and other
        subtypes."""
        event = payload.get("event") if isinstance(payload, dict) else None
        if not isinstance(event, dict) or not isinstance(event.get("channel"), str) \
                or not isinstance(event.get("ts"), str):
            return False
        key = (event["channel"], event["ts"])
        if event.get("type") == "app_mention":
            self._mentions[key] = None
            while len(self._mentions) > MENTIONS_KEPT:
                self._mentions.popitem(last=False)
            return False
        if event.get("type") != "message" or event.get("subtype") not in TWIN_SUBTYPES or key not in self._mentions:
            return False
        del self._mentions[key]
        return True

    async def handle(self, client: Any, req: SocketModeRequest) -> None:
        start = time.time()
        if req.type == "events_api":
            self.gate.taken()
            try:
                await send_async_response(client, req, BoltResponse(status=200, body=""), start)
            finally:
                self.gate.acked()
            if not (self.own_message(req.payload) or self.mention_twin(req.payload)):
                self._dispatch_after_acks(req)
            return
        resp = await self._dispatch(req)
        if self._unhandled(req, resp):
            resp = BoltResponse(status=200, body="")
        await send_async_response(client, req, resp, start)

    def _dispatch_after_acks(self, req: SocketModeRequest) -> None:
        """Dispatch `req` once every envelope read so far is acked (AckGate; WAIT at most from the first one held):
        a burst's envelopes are all read and acked before Bolt works on any of them (reading the next envelope no
        longer waits behind the dispatch of the ones before it); then all those held are dispatched at once, in the
        order they came."""
        self._held.append((req, asyncio.get_running_loop().time() + self.gate.WAIT))
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.ensure_future(self._release())

    async def _release(self) -> None:
        while self._held:
            await self.gate.wait(self._held[0][1])
            held, self._held = self._held, []
            for req, _ in held:  # tasks start in the order they are made
                self._dispatches.add(task := asyncio.ensure_future(self._dispatch_event(req)))
                task.add_done_callback(self._dispatches.discard)

    async def _dispatch_event(self, req: SocketModeRequest) -> None:
        self._unhandled(req, await self._dispatch(req))

    @staticmethod
    def _unhandled(req: SocketModeRequest, resp: BoltResponse) -> bool:
        if resp.status == 200:
            return False
        log.debug("envelope %s (%s: %s) not handled (status %s); acked", req.envelope_id, req.type,
                  describe(req.payload), resp.status)
        return True

    async def _dispatch(self, req: SocketModeRequest) -> BoltResponse:
        """Bolt's middleware and listeners on one envelope; a payload Bolt itself chokes on is a 500 (and a debug
        line), never an exception out of the socket client."""
        try:
            resp = await run_async_bolt_app(self.app, req)
        except Exception:  # Bolt itself choked on the payload: still ack, or Slack redelivers it three times
            log.debug("envelope %s (%s) could not be dispatched", req.envelope_id, req.type, exc_info=True)
            resp = BoltResponse(status=500, body="")
        return resp


async def ack_unparseable(client: Any, message: dict[Any, Any], raw: str | None) -> None:
    """A socket message listener: ack envelopes slack_sdk cannot turn into a request (they reach no handler)."""
    envelope_id = message.get("envelope_id")
    if not isinstance(envelope_id, str) or not envelope_id:
        return
    if all(k in message for k in ("type", "payload")) and isinstance(message["payload"], dict | str):
        return  # a request: AckingSocketModeHandler.handle acks it
    log.debug("envelope %s (%s) is malformed; acked", envelope_id, str(message.get("type"))[:40])
    await client.send_socket_mode_response({"envelope_id": envelope_id})


async def on_listener_error(error: Exception, body: Any) -> None:
    """Bolt's error handler: an event we do not listen to is normal; a listener that raised is a bug to see."""
    if isinstance(error, BoltUnhandledRequestError):
        log.debug("no listener for %s; acked", describe(body))
    else:
        log.error("listener failed on %s: %s", describe(body), error, exc_info=error)


class QuietReconnects(logging.Filter):
    """Ordinary socket drops and reconnects go to debug, without tracebacks; only a socket that stays down
    longer than QUIET_FOR is a warning (one line, at most once per QUIET_FOR)."""

    _ORDINARY = ("session", "Reconnecting", "Failed to connect", "Failed to send a ping", "Failed to close the old",
                 "Failed to receive or enqueue", "Failed to check the current session", "CLOSE event",
                 "Failed to run message listeners: Unsupported payload")

    def __init__(self, quiet_for: float = QUIET_FOR) -> None:
        super().__init__()
        self.quiet_for = quiet_for
        self.down_since: float | None = None
        self._warned = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "has been established" in text:
            self.down_since = None
        elif not any(k in text for k in self._ORDINARY):
            return True
        elif record.levelno > logging.INFO or "Reconnecting" in text:
            now = time.monotonic()
            self.down_since = self.down_since or now
            if now - self.down_since >= self.quiet_for and now - self._warned >= self.quiet_for:
                self._warned = now
                record.msg, record.args, record.exc_info, record.exc_text = (
                    f"Slack socket down for {int(now - self.down_since)} s, still reconnecting: "
                    f"{text.splitlines()[0][:200]}", None, None, None)
                record.levelno, record.levelname = logging.WARNING, "WARNING"
                return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.exc_info = record.exc_text = None
        return socket_log.isEnabledFor(logging.DEBUG)


def quiet_socket_logger() -> logging.Logger:
    """The logger to hand the socket-mode client (its level follows the root logger's, as Bolt's does)."""
    if not any(isinstance(f, QuietReconnects) for f in socket_log.filters):
        socket_log.addFilter(QuietReconnects())
    socket_log.setLevel(logging.getLogger().getEffectiveLevel())
    return socket_log
