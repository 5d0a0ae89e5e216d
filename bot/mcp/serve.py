"""Running the MCP server: over stdio (the client spawns us) or streamable HTTP behind a bearer token.

Stand-alone (`vision-agent mcp`) builds its own Runtime in the workspace; `serve --mcp-port` passes its running one
to `McpHttpServer`, so MCP clients and Slack share the pipelines, rules and event log.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Coroutine
from io import TextIOWrapper
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.mcp.adapter import McpAdapter
from bot.mcp.limits import guarded_protocol, transport_security
from bot.media.reach import is_loopback
from bot.process import Lifetime

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.runtime import Runtime

log = logging.getLogger(__name__)

PATH = "/mcp"
NO_TOKEN = ("MCP over HTTP needs a bearer token: set VISION_AGENT_MCP_TOKEN (clients send 'Authorization: Bearer "
            "<token>'), or use stdio (`vision-agent mcp` without --http)")


def http_refusal(settings: Settings, host: str) -> str | None:
    """Why HTTP may not start (one line), or None: without a token nothing is served, least of all off loopback."""
    if settings.mcp.token is None or not settings.mcp.token.get_secret_value().strip():
        where = "" if is_loopback(host) else f" (refusing to bind {host}, which is not a loopback address)"
        return NO_TOKEN + where
    return None


class BearerGate:
    """ASGI: every HTTP request must carry `Authorization: Bearer <token>` (constant-time compare), else 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self._token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._ok(scope):
            body = json.dumps({"status": "error", "error": "missing or wrong bearer token (VISION_AGENT_MCP_TOKEN)"})
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="vision-agent"')]})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await self.app(scope, receive, send)

    def _ok(self, scope: Scope) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)


def http_app(adapter: McpAdapter, token: str, security: TransportSecuritySettings | None = None) -> ASGIApp:
    """The streamable HTTP endpoint at /mcp, behind the bearer gate (and the Host/Origin check: bot/mcp/limits.py)."""
    manager = StreamableHTTPSessionManager(app=adapter.server, security_settings=security)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app = Starlette(routes=[Route(PATH, endpoint=_Endpoint(manager))], lifespan=lifespan)
    return BearerGate(app, token)


class _Endpoint:
    """An ASGI app object: Starlette routes every method to it (a plain function would become a GET handler)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the process that runs it (serve, or run_mcp) owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


def _server(runtime: Runtime, host: str, port: int, read_only: bool | None) -> _EmbeddedServer:
    """The uvicorn server for MCP over HTTP; ValueError (one line) when HTTP may not start here."""
    settings = runtime.settings
    if why := http_refusal(settings, host):
        raise ValueError(why)
    assert settings.mcp.token is not None  # checked by http_refusal
    token = settings.mcp.token.get_secret_value().strip()  # a redactor secret too (Runtime)
    app = http_app(McpAdapter(runtime, read_only), token, transport_security(settings, host))
    # h11 behind a ConnectionGuard: slow headers or bodies and half-sent connections cannot hold it (bot/mcp/limits.py)
    return _EmbeddedServer(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                                          http=guarded_protocol(settings), timeout_keep_alive=5,
                                          backlog=min(1024, settings.servers.max_connections * 2)))


async def _run(server: _EmbeddedServer, stop: asyncio.Event | None) -> None:
    watcher = asyncio.create_task(_stop_when(stop, server)) if stop is not None else None
    try:
        await server.serve()
    except SystemExit:  # uvicorn exits the process when it cannot bind; here that is one line, not an exit
        cfg = server.config
        raise OSError(f"cannot listen on {cfg.host}:{cfg.port} (in use, or not an address of this machine); "
                      "pick another port or host") from None
    finally:
        server.should_exit = True
        if watcher is not None:
            watcher.cancel()


async def _stop_when(stop: asyncio.Event, server: uvicorn.Server) -> None:
    await stop.wait()
    server.should_exit = True  # a graceful shutdown: open sessions end, the lifespan closes the session manager


class McpHttpServer:
    """MCP over HTTP on a runtime: `vision-agent mcp --http`'s own, or `serve --mcp-port`'s (shared with Slack)."""

    def __init__(self, runtime: Runtime, host: str, port: int, stop: asyncio.Event | None = None) -> None:
        self.runtime, self.host, self.port = runtime, host, port
        self._stop = stop or asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 10.0) -> None:
        """Start and wait until it listens; ValueError/OSError (one line) when it may not or cannot."""
        server = _server(self.runtime, self.host, self.port, None)
        self._task = asyncio.create_task(_run(server, self._stop))
        deadline = asyncio.get_running_loop().time() + timeout
        while not server.started:
            if self._task.done():
                self._task.result()  # raises the one-line reason
                raise OSError(f"MCP server on {self.host}:{self.port} stopped at start")
            if asyncio.get_running_loop().time() > deadline:
                raise OSError(f"MCP server on {self.host}:{self.port} did not start within {timeout:.0f}s")
            await asyncio.sleep(0.05)
        log.info("MCP over HTTP on %s:%s%s", self.host, self.port, PATH)

    async def wait(self) -> None:
        """Until it has stopped (the stop event, or a failure, which is raised)."""
        if self._task is not None:
            await self._task

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 10)


async def serve_stdio(runtime: Runtime) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server  # only the stdio command needs it

    # The JSON-RPC stream gets its own copy of fd 1; fd 1 itself becomes stderr, so a stray print from a library
    # (inference, OpenCV, a C extension) lands in the log instead of corrupting the protocol.
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    out = anyio.wrap_file(TextIOWrapper(proto, encoding="utf-8", write_through=True))
    adapter = McpAdapter(runtime)
    async with stdio_server(stdout=out) as (read, write):
        await adapter.server.run(read, write, adapter.server.create_initialization_options())


def run_mcp(settings: Settings, http: bool, host: str | None, port: int | None) -> int:
    """`vision-agent mcp`: exit 0 when the client goes away or on SIGINT/SIGTERM, 2 with one line when refused."""
    host = host or settings.mcp.host
    port = port or settings.mcp.port
    if http and (why := http_refusal(settings, host)):
        print(f"vision-agent mcp: {why}", file=sys.stderr)
        return 2
    return asyncio.run(_main(settings, http, host, port))


async def _main(settings: Settings, http: bool, host: str, port: int) -> int:
    from bot.runtime import Runtime  # loads the agent and its SDKs: after the arguments were checked

    stop = asyncio.Event()
    lifetime = Lifetime("vision-agent mcp")
    lifetime.install(stop.set)
    async with Runtime(settings) as rt:
        lifetime.holds = rt.leaving
        try:
            if http:
                server = McpHttpServer(rt, host, port, stop)
                await server.start()  # listening (or the one-line reason) before it says so
                lifetime.say(f"serving http://{host}:{port}{PATH}; {rt.holding()}. Ctrl-C stops it.")
                await server.wait()  # HTTP stops gracefully: open sessions end
            else:
                # stderr: stdout carries the protocol. A client (Claude Desktop, Code) shows this in its MCP log.
                lifetime.say(f"serving MCP on stdio; {rt.holding()}. It ends when the client closes stdin.")
                await _until(serve_stdio(rt), stop)
                lifetime.stop_asked("the client closed stdin")  # or a signal said why already
        except (OSError, ValueError) as exc:
            print(f"vision-agent mcp: {exc}", file=sys.stderr)
            return 1
    return lifetime.finish(0)  # pipelines stay saved for the next start


async def _until(serving: Coroutine[Any, Any, None], stop: asyncio.Event) -> None:
    """Serve until the client goes or `stop` is set. Stopped, the server is cancelled and not waited for: its reader
    is a thread blocked on stdin until the client writes again, and the process ends without it."""
    task, stopped = asyncio.ensure_future(serving), asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if task.done():
        task.result()
    else:
        task.cancel()
