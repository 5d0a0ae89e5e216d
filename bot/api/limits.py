"""Servers that cannot be held open: a header deadline, a connection cap and a body deadline for our HTTP servers.

A client that opens a connection and sends its request a byte at a time (slowloris), or opens thousands and never
finishes them, would otherwise hold a file descriptor and a slot each for as long as it likes: 1,100 half-sent
requests starved the operator and exhausted the process's descriptors. `ConnectionGuard` watches every connection of
one server: one that has not finished a request's headers within `servers.header_timeout_seconds` is closed, and at
`servers.max_connections` the oldest connection still waiting for headers makes room for the new one (one already
answering a request is never dropped for a newcomer). `GuardedSite` puts it in front of an aiohttp app (REST API,
/healthz); bot/mcp/limits.py puts it in front of uvicorn. The body deadline is `read_body` (the API's `guard`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

if TYPE_CHECKING:
    from bot.config.sections import ServersConfig

log = logging.getLogger(__name__)


class Watched(Protocol):
    """What the guard asks of a connection (an aiohttp or uvicorn protocol)."""

    def waiting(self) -> bool:
        """No request is being answered: the connection is sending headers, or idle between requests."""

    def progress(self) -> object:
        """Changes each time a request's headers are complete."""


class ConnectionGuard:
    """The open connections of one server, oldest first, each with a header deadline."""

    def __init__(self, header_timeout: float, max_connections: int) -> None:
        self.header_timeout, self.max_connections = header_timeout, max_connections
        self._open: dict[Watched, tuple[asyncio.BaseTransport, asyncio.TimerHandle]] = {}
        self.closed_slow = self.refused = 0  # for the log and the tests

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, conn: Watched, transport: asyncio.BaseTransport) -> None:
        if len(self._open) >= self.max_connections and not self._make_room():
            self.refused += 1
            transport.close()  # everyone is being answered: the newcomer waits for nobody, it is closed at once
            return
        self._open[conn] = (transport, self._arm(conn, conn.progress()))

    def closed(self, conn: Watched) -> None:
        entry = self._open.pop(conn, None)
        if entry is not None:
            entry[1].cancel()

    def _make_room(self) -> bool:
        for conn in self._open:  # insertion order: the oldest first
            if conn.waiting():
                self._drop(conn)
                return True
        return False

    def _arm(self, conn: Watched, seen: object) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(self.header_timeout, self._check, conn, seen)

    def _check(self, conn: Watched, seen: object) -> None:
        if conn not in self._open:
            return
        now = conn.progress()
        if conn.waiting() and now == seen:  # no request's headers completed in a whole header timeout
            self.closed_slow += 1
            self._drop(conn)
            return
        self._open[conn] = (self._open[conn][0], self._arm(conn, now))

    def _drop(self, conn: Watched) -> None:
        transport, timer = self._open.pop(conn)
        timer.cancel()
        transport.close()


class _GuardedHandler(RequestHandler):
    """aiohttp's per-connection protocol, reporting to the server's guard."""

    def __init__(self, guard: ConnectionGuard, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._guard.opened(self, transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._guard.closed(self)
        super().connection_lost(exc)

    def waiting(self) -> bool:
        return self._current_request is None and not self._messages

    def progress(self) -> object:
        return self._request_count


class _Factory:
    """The protocol factory for `loop.create_server`: aiohttp's own handler, guarded."""

    def __init__(self, server: web.Server, guard: ConnectionGuard) -> None:
        self.server, self.guard = server, guard

    def __call__(self) -> RequestHandler:
        return _GuardedHandler(self.guard, self.server, loop=asyncio.get_running_loop(), **self.server._kwargs)


class GuardedSite:
    """One aiohttp app served on host:port behind a `ConnectionGuard` (REST API, /healthz): open, then close."""

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None

    async def open(self, app: web.Application, host: str, port: int, limits: ServersConfig) -> int:
        """Serve `app`; the port it listens on (port 0: any free one)."""
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        assert self._runner.server is not None
        guard = ConnectionGuard(limits.header_timeout_seconds, limits.max_connections)
        self._server = await asyncio.get_running_loop().create_server(
            _Factory(self._runner.server, guard), host, port, backlog=min(1024, limits.max_connections * 2))
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening first, then `cleanup()` closes the connections still open (twice is harmless)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def read_body(request: web.Request, limits: ServersConfig) -> None:
    """Read the body within `servers.body_timeout_seconds` (aiohttp keeps it for the handler), else 408."""
    if not request.body_exists:
        return
    try:
        await asyncio.wait_for(request.read(), limits.body_timeout_seconds)
    except TimeoutError:
        raise web.HTTPRequestTimeout(reason="request body too slow; send it at once") from None
