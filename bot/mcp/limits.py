"""MCP over HTTP that cannot be held open or reached by a rebinding page: uvicorn's connections behind the same
`ConnectionGuard` as the REST API (header deadline, connection cap), a body deadline, and the Host/Origin check.

A browser page on a hostile site can resolve its own name to 127.0.0.1 (DNS rebinding) and then talk to a loopback
server as "same origin"; the MCP SDK's transport security refuses a Host that is not ours (421) and an Origin that
is not ours (403). Ours: loopback names, `mcp.host`, and `servers.allowed_hosts` (a name a proxy forwards as).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import h11
from mcp.server.transport_security import TransportSecuritySettings
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.api.limits import ConnectionGuard

if TYPE_CHECKING:
    from bot.config import Settings

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def transport_security(settings: Settings, host: str) -> TransportSecuritySettings:
    """Only our names in Host and Origin (any port), however the server is bound."""
    names = {*LOOPBACK, *(n.strip() for n in settings.servers.allowed_hosts if n.strip())}
    if host not in ("0.0.0.0", "::", ""):  # a wildcard bind is no name a client sends
        names.add(f"[{host}]" if ":" in host else host)
    hosts = sorted({f"{n}:*" for n in names} | names)
    origins = sorted({f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def guarded_protocol(settings: Settings) -> type[H11Protocol]:
    """An h11 protocol class for uvicorn.Config(http=...) whose connections one `ConnectionGuard` watches."""
    limits = settings.servers
    guard = ConnectionGuard(limits.header_timeout_seconds, limits.max_connections)
    body_timeout = limits.header_timeout_seconds + limits.body_timeout_seconds

    class Guarded(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._body_timer: asyncio.TimerHandle | None = None
            guard.opened(self, transport)

        def connection_lost(self, exc: Exception | None) -> None:
            guard.closed(self)
            if self._body_timer is not None:
                self._body_timer.cancel()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before and self.cycle is not None:  # a new request: its body has a deadline too
                if self._body_timer is not None:
                    self._body_timer.cancel()
                self._body_timer = self.loop.call_later(body_timeout, self._body_late, self.cycle)

        def _body_late(self, cycle: Any) -> None:
            if self.cycle is cycle and self.conn.their_state is h11.SEND_BODY and self.transport is not None:
                self.transport.close()  # still sending the body of this request

        def waiting(self) -> bool:
            return self.cycle is None or bool(self.cycle.response_complete)

        def progress(self) -> object:
            return self.cycle

    return Guarded
