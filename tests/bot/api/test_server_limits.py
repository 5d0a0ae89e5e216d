"""Servers that cannot be held open (issue 22 item 9), on the real servers on 127.0.0.1: hundreds of half-sent
requests (slowloris) neither starve an authorised request nor stay open past the header timeout, the connection
count stays under the cap, a slow body gets 408, and MCP over HTTP refuses a foreign Host (421) or Origin (403)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.api.server import ApiServer
from bot.backends.provider import BackendProvider
from bot.config import Settings, load_settings
from bot.config.settings import ServersConfig
from bot.mcp.serve import McpHttpServer
from bot.runtime import Runtime
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.tools.fake_backend import FakeBackend

TOKEN = "server-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HALF_SENT = 300
CAP = 64
HEADER_TIMEOUT = 1.0


def limited(env: dict[str, str]) -> Settings:
    settings = load_settings({**env, "VISION_AGENT_API_TOKEN": TOKEN, "VISION_AGENT_MCP_TOKEN": TOKEN})
    return settings.model_copy(update={"servers": ServersConfig(
        header_timeout_seconds=HEADER_TIMEOUT, body_timeout_seconds=1.0, max_connections=CAP)})


@pytest.fixture
async def runtime(base_env: dict[str, str]) -> AsyncIterator[Runtime]:
    rt = Runtime(limited(base_env), background=False)
    rt.backend = BackendProvider.of(FakeBackend())
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


@pytest.fixture
async def api(runtime: Runtime) -> AsyncIterator[int]:
    server = ApiServer(runtime, "127.0.0.1", 0)
    port = await server.start()
    try:
        yield port
    finally:
        await server.stop()


@pytest.fixture
async def mcp(runtime: Runtime) -> AsyncIterator[int]:
    port = free_port()
    server = McpHttpServer(runtime, "127.0.0.1", port)
    await server.start()
    try:
        yield port
    finally:
        await server.stop()


async def half_sent(port: int, n: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """n connections, each with a request line and one header but never the blank line that ends the headers."""
    conns = []
    for i in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /api/pipelines?{i} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
        conns.append((reader, writer))
    await asyncio.gather(*(w.drain() for _, w in conns))
    return conns


async def all_closed_by_server(conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]], within: float) -> int:
    """How many of them the server closed (EOF, or reset) within `within` seconds."""
    async def closed(reader: asyncio.StreamReader) -> bool:
        try:
            return await asyncio.wait_for(reader.read(), within) is not None
        except TimeoutError:  # before OSError: TimeoutError is one
            return False
        except (ConnectionError, OSError):
            return True
    try:
        return sum(await asyncio.gather(*(closed(r) for r, _ in conns)))
    finally:
        for _, w in conns:
            w.close()


async def test_half_sent_requests_do_not_starve_the_rest_api_and_are_closed(api: int) -> None:
    conns = await half_sent(api, HALF_SENT)
    started = time.monotonic()
    async with aiohttp.ClientSession(headers=AUTH) as http:
        async with http.get(f"http://127.0.0.1:{api}/api/pipelines",
                            timeout=aiohttp.ClientTimeout(total=patience(10))) as r:
            assert r.status == 200, await r.text()
    assert time.monotonic() - started < patience(10)
    # every half-sent connection is gone: the cap dropped the oldest, the header timeout the rest
    assert await all_closed_by_server(conns, within=patience(HEADER_TIMEOUT * 3 + 5)) == HALF_SENT


async def test_a_slowloris_that_keeps_sending_header_bytes_is_still_closed(api: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", api)
    writer.write(b"GET /api/pipelines HTTP/1.1\r\n")
    started = time.monotonic()
    closed = False
    while time.monotonic() - started < patience(HEADER_TIMEOUT * 6):
        try:
            writer.write(b"X-a: b\r\n")  # a header line now and then, never the end of the headers
            await writer.drain()
            data = await asyncio.wait_for(reader.read(1024), HEADER_TIMEOUT / 4)
            if data == b"" or b"HTTP/1.1" in data:
                closed = True
                break
        except TimeoutError:
            continue
        except (ConnectionError, OSError):
            closed = True
            break
    writer.close()
    assert closed, "the server kept a connection whose headers never ended"
    assert time.monotonic() - started < HEADER_TIMEOUT * 4


async def test_a_slow_body_gets_408(api: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", api)
    writer.write(f"POST /api/pipelines HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                 "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"source\": ".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.read(4096), patience(10))
    writer.close()
    assert head.startswith(b"HTTP/1.1 408"), head[:200]
    assert b"too slow" in head


def initialize(port: int, **headers: str) -> tuple[str, dict[str, str], bytes]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    return (f"http://127.0.0.1:{port}/mcp",
            {**AUTH, "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
            body.encode())


async def post(port: int, **headers: str) -> tuple[int, str]:
    url, hdrs, body = initialize(port, **headers)
    async with aiohttp.ClientSession() as http, http.post(url, headers=hdrs, data=body,
                                                         timeout=aiohttp.ClientTimeout(total=patience(10))) as r:
        return r.status, await r.text()


async def test_mcp_over_http_refuses_a_foreign_host_or_origin(mcp: int) -> None:
    assert (await post(mcp))[0] == 200
    assert (await post(mcp, Host=f"localhost:{mcp}"))[0] == 200
    assert (await post(mcp, Origin=f"http://127.0.0.1:{mcp}"))[0] == 200
    assert (await post(mcp, Host="rebind.attacker.example"))[0] == 421
    assert (await post(mcp, Host=f"attacker.example:{mcp}"))[0] == 421
    assert (await post(mcp, Origin="http://attacker.example"))[0] == 403
    assert (await post(mcp, Origin=f"http://127.0.0.1.attacker.example:{mcp}"))[0] == 403


async def test_half_sent_requests_do_not_starve_mcp_over_http_and_are_closed(mcp: int) -> None:
    conns = await half_sent(mcp, HALF_SENT)
    started = time.monotonic()
    assert (await post(mcp))[0] == 200
    assert time.monotonic() - started < patience(10)
    assert await all_closed_by_server(conns, within=patience(HEADER_TIMEOUT * 3 + 5)) == HALF_SENT


def test_limits_have_sane_defaults(settings: Settings) -> None:
    limits = settings.servers
    assert 1 <= limits.header_timeout_seconds <= 30 and 5 <= limits.body_timeout_seconds <= 120
    assert 16 <= limits.max_connections <= 1024
    assert limits.allowed_hosts == []

