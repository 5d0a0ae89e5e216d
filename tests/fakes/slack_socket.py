"""The Slack emulator's socket mode: hello, envelopes, acks, resends of unacked envelopes, disconnects."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack_methods import SlackError, check_blocks
from tests.fakes.waits import patience


def blocks_error(payload: Any) -> str | None:
    """Slack's error for a response payload (an ack's, a response_url's) with blocks it refuses; None if fine."""
    if not isinstance(payload, dict) or not payload.get("blocks"):
        return None
    try:
        check_blocks(payload["blocks"])
    except SlackError as exc:
        return exc.error
    return None


@dataclass
class Envelope:
    """One envelope Slack pushes over the socket, and what happened to it."""

    envelope_id: str
    type: str  # events_api | slash_commands | interactive
    payload: dict[str, Any]
    accepts_response_payload: bool = False
    retry_attempt: int = 0
    retry_reason: str = ""
    sent_at: list[float] = field(default_factory=list)
    connection: int | None = None
    acked_at: float | None = None
    ack_payload: dict[str, Any] | None = None
    ack_error: str | None = None  # what Slack would show instead of an ack payload whose blocks it refuses
    raw: dict[str, Any] | None = None  # sent as is instead of the fields above (malformed envelopes, fuzzing)

    def wire(self) -> str:
        if self.raw is not None:
            return json.dumps(self.raw)
        return json.dumps({
            "envelope_id": self.envelope_id, "type": self.type, "payload": self.payload,
            "accepts_response_payload": self.accepts_response_payload,
            "retry_attempt": self.retry_attempt, "retry_reason": self.retry_reason,
        })

    @property
    def ack_latency(self) -> float | None:
        """Seconds from the first send to the ack."""
        return None if self.acked_at is None or not self.sent_at else self.acked_at - self.sent_at[0]


class SocketModeMixin:
    """Mixed into SlackEmulator: the WebSocket endpoint that apps.connections.open hands out."""

    def _init_socket(self, ack_timeout: float, max_retries: int) -> None:
        self.ack_timeout = ack_timeout
        self.max_retries = max_retries
        self.echo_bot_messages = True  # Slack delivers the bot's own posts back as message events
        self.envelopes: dict[str, Envelope] = {}
        self.connections_opened = 0
        self._sockets: dict[int, web.WebSocketResponse] = {}
        self._draining: set[int] = set()
        self._pending: list[Envelope] = []  # waiting for a connection
        self._send_lock: asyncio.Lock | None = None
        self._tickets = itertools.count(1)
        self._resender: asyncio.Task | None = None

    def socket_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket={next(self._tickets)}"

    def _start_socket_tasks(self) -> None:
        self._send_lock = asyncio.Lock()
        self._resender = asyncio.get_running_loop().create_task(self._resend_loop())

    async def _close_sockets(self) -> None:
        if self._resender is not None:
            self._resender.cancel()
        for ws in list(self._sockets.values()):
            await ws.close()

    # the WebSocket ---------------------------------------------------------------
    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._cond:
            self.connections_opened += 1
            conn = self.connections_opened
            self._cond.notify_all()
        await ws.send_str(json.dumps({
            "type": "hello", "num_connections": len(self._sockets) + 1,
            "debug_info": {"host": "emulator", "approximate_connection_time": 3600},
            "connection_info": {"app_id": self.app_id},
        }))
        self._sockets[conn] = ws
        for env in self._take_pending():
            await self._send(env)
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._on_ack(json.loads(msg.data))
        finally:
            self._sockets.pop(conn, None)
            self._draining.discard(conn)
            self._requeue_unacked(conn)
            for env in self._take_pending():  # a newer socket may already be up (disconnect flow)
                await self._send(env)
        return ws

    def _on_ack(self, data: dict[str, Any]) -> None:
        with self._cond:
            env = self.envelopes.get(data.get("envelope_id", ""))
            if env is not None and env.acked_at is None:
                env.acked_at = time.time()
                env.ack_payload = data.get("payload")
                env.ack_error = blocks_error(env.ack_payload)
            self._cond.notify_all()

    def _take_pending(self) -> list[Envelope]:
        with self._cond:
            pending, self._pending = self._pending, []
        return pending

    def _requeue_unacked(self, conn: int) -> None:
        """Envelopes sent on a connection that died before acking go out again on the next one."""
        with self._cond:
            for env in self.envelopes.values():
                if env.connection == conn and env.acked_at is None and env.type == "events_api":
                    env.retry_attempt += 1
                    env.retry_reason = "connection_closed"
                    self._pending.append(env)

    def _live_connection(self) -> int | None:
        live = [c for c in self._sockets if c not in self._draining and not self._sockets[c].closed]
        return max(live) if live else None

    async def _send(self, env: Envelope) -> None:
        assert self._send_lock is not None
        async with self._send_lock:  # FIFO: envelopes leave in the order they were pushed
            conn = self._live_connection()
            if conn is None:
                with self._cond:
                    self._pending.append(env)
                return
            env.connection = conn
            env.sent_at.append(time.time())
            await self._sockets[conn].send_str(env.wire())

    async def _resend_loop(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            now = time.time()
            with self._cond:
                due = [e for e in self.envelopes.values() if e.type == "events_api" and e.acked_at is None
                       and e.sent_at and now - e.sent_at[-1] > self.ack_timeout and e.retry_attempt < self.max_retries]
                for env in due:
                    env.retry_attempt += 1
                    env.retry_reason = "timeout"
            for env in due:
                await self._send(env)

    # pushing (from any thread) ---------------------------------------------------------
    def push(self, type_: str, payload: dict[str, Any], *, accepts_response_payload: bool = False) -> Envelope:
        """Send an envelope to the app (queued until a connection exists); returns its record."""
        env = Envelope(self.next_id("env-"), type_, payload, accepts_response_payload)
        with self._cond:
            self.envelopes[env.envelope_id] = env
        self._schedule(self._send(env))
        return env

    def push_raw(self, envelope: dict[str, Any]) -> Envelope:
        """Send any JSON object as an envelope (its envelope_id, if any, is what an ack must name); for testing
        how an app copes with types and shapes it does not expect. Never resent."""
        env = Envelope(str(envelope.get("envelope_id") or self.next_id("raw-")), "raw", {}, raw=envelope)
        with self._cond:
            self.envelopes[env.envelope_id] = env
        self._schedule(self._send(env))
        return env

    def redeliver(self, env: Envelope, reason: str = "timeout") -> Envelope:
        """Slack's retry of an event: same payload and event_id, a new envelope with retry_attempt + 1."""
        again = Envelope(self.next_id("env-"), env.type, env.payload, env.accepts_response_payload,
                         retry_attempt=env.retry_attempt + 1, retry_reason=reason)
        with self._cond:
            self.envelopes[again.envelope_id] = again
        self._schedule(self._send(again))
        return again

    def _schedule(self, coro: Any) -> None:
        assert self._loop is not None, "emulator not started"
        if threading.current_thread() is self._thread:
            self._loop.create_task(coro)
        else:
            self._loop.call_soon_threadsafe(self._loop.create_task, coro)

    def wait_connected(self, count: int = 1, timeout: float = 10.0) -> None:
        """Block until `count` connections were opened in total and one is live."""
        deadline = time.monotonic() + patience(timeout)
        with self._cond:
            while self.connections_opened < count or not self._sockets:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.connections_opened}/{count} socket connections after {timeout}s")
                self._cond.wait(min(left, 0.05))

    def wait_ack(self, env: Envelope, timeout: float = 5.0) -> Envelope:
        deadline = time.monotonic() + patience(timeout)
        with self._cond:
            while env.acked_at is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"envelope {env.envelope_id} ({env.type}) not acked in {timeout}s")
                self._cond.wait(left)
        return env

    async def await_ack(self, env: Envelope, timeout: float = 5.0) -> Envelope:
        """`wait_ack` for async tests (the app under test may share the caller's loop)."""
        return await asyncio.to_thread(self.wait_ack, env, timeout)

    async def await_connected(self, count: int = 1, timeout: float = 10.0) -> None:
        await asyncio.to_thread(self.wait_connected, count, timeout)

    @property
    def connected(self) -> bool:
        return self._live_connection() is not None

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask the app to reconnect (Slack's `disconnect` message); new envelopes wait for the new socket."""
        async def go() -> None:
            conn = self._live_connection()
            if conn is not None:
                self._draining.add(conn)
                await self._sockets[conn].send_str(json.dumps({"type": "disconnect", "reason": reason,
                                                               "debug_info": {"host": "emulator"}}))
        self._call_in_loop(go())

    def drop(self) -> None:
        """Close every socket abruptly from the server side (network blip, Slack restart)."""
        async def go() -> None:
            for conn, ws in list(self._sockets.items()):
                self._draining.add(conn)
                await ws.close()
        self._call_in_loop(go())
