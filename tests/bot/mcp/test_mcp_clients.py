"""A real MCP client (the SDK's ClientSession) drives `vision-agent mcp` over stdio and streamable HTTP.

The server is the installed console script in a temp workspace with the real in-process inference backend; its
results are compared with the agent's own registry results for the same call.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.bot.mcp.helpers import (
    TOKEN,
    VISION_AGENT,
    agent_call,
    as_agent_sees,
    decoded,
    server_env,
    until_finished,
)
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.fixtures.inference import make_video
from tools import build_registry

pytestmark = pytest.mark.slow
FACES = {"model_id": "builtin/faces"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, astronaut_jpeg: bytes) -> Path:
    ws = tmp_path_factory.mktemp("mcp-ws")
    (ws / "astronaut.jpg").write_bytes(astronaut_jpeg)
    make_video(ws / "faces.mp4")
    return ws


@pytest.fixture(scope="module")
def agent_faces(workspace: Path) -> tuple[str, list[bytes], bool]:
    """The agent's run_inference result on the photo: what every MCP transport must return."""
    result = agent_call(workspace, "run_inference", {"image": str(workspace / "astronaut.jpg"), **FACES})
    assert not result.is_error and "1 face" in result.text, result.text
    return as_agent_sees(result)


async def check_session(session: ClientSession, workspace: Path, agent_faces: Any, pipeline: str) -> None:
    """Tools listed with the registry's schemas; run_inference equals the agent's; a pipeline runs and stops."""
    await session.initialize()
    listed = {t.name: t for t in (await session.list_tools()).tools}
    for d in build_registry().definitions():
        assert listed[d["name"]].inputSchema == d["input_schema"], d["name"]
    assert {"list_cameras", "list_rules", "get_events"} <= set(listed)

    got = decoded(await session.call_tool("run_inference", {"image": str(workspace / "astronaut.jpg"), **FACES}))
    assert got == agent_faces and got[1] and got[1][0][:2] == b"\xff\xd8"  # text, annotated JPEG, no error

    started = decoded(await session.call_tool("start_pipeline", {
        "video_reference": str(workspace / "faces.mp4"), "pipeline_name": pipeline, "line": "middle", **FACES}))
    assert not started[2] and f"Pipeline '{pipeline}' started" in started[0], started[0]
    assert "finished" in await until_finished(session, pipeline)
    text, _, err = decoded(await session.call_tool("get_pipeline_results", {"pipeline_id": pipeline}))
    assert not err and "count_in=1, count_out=1" in text, text  # one face crossed each way
    for _ in range(int(patience(30) / 0.5)):  # the alert is logged when dispatched, which may wait for its clip
        events, _, _ = decoded(await session.call_tool("get_events", {"since": 3600, "camera": pipeline}))
        if "crossings" in events:
            break
        await asyncio.sleep(0.5)
    assert "crossings in 1 / out 1" in events, events  # the monitor ran in the MCP process and logged it
    stopped, _, err = decoded(await session.call_tool("stop_pipeline", {"pipeline_id": pipeline}))
    assert not err and "stopped" in stopped


async def test_stdio_client_lists_tools_runs_inference_and_a_pipeline_like_the_agent(workspace, agent_faces) -> None:
    params = StdioServerParameters(command=str(VISION_AGENT), args=["mcp"], env=server_env(workspace), cwd=str(workspace))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await check_session(session, workspace, agent_faces, "door_stdio")


@pytest.fixture
def http_server(workspace: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([str(VISION_AGENT), "mcp", "--http", "--port", str(port)], cwd=workspace,
                            env=server_env(workspace, VISION_AGENT_MCP_TOKEN=TOKEN), stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"vision-agent mcp --http exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("vision-agent mcp --http did not listen in time")


def client(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300), trust_env=False)


async def test_http_client_with_the_token_gets_what_the_agent_gets(http_server: str, workspace, agent_faces) -> None:
    async with client(TOKEN) as http, streamable_http_client(http_server, http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await check_session(session, workspace, agent_faces, "door_http")


@pytest.mark.parametrize("token", [None, "wrong-token", TOKEN + "x"])
async def test_http_without_the_right_token_is_refused(http_server: str, token: str | None) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    async with client(token) as http:
        resp = await http.post(http_server, json=init, headers={"Accept": "application/json, text/event-stream"})
        assert resp.status_code == 401 and resp.json()["status"] == "error"
        listed = await http.post(http_server, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert listed.status_code == 401
    with pytest.raises(ExceptionGroup) as refused:  # the SDK client cannot even initialise
        async with client(token) as http, streamable_http_client(http_server, http_client=http) as (r, w, _), \
                ClientSession(r, w) as session:
            await asyncio.wait_for(session.initialize(), 20)
    assert refused.group_contains(httpx.HTTPStatusError, match="401")


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_http_without_a_token_does_not_start(workspace: Path, host: str) -> None:
    port = free_port()
    done = subprocess.run([str(VISION_AGENT), "mcp", "--http", "--host", host, "--port", str(port)], cwd=workspace,
                          env=server_env(workspace), capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "VISION_AGENT_MCP_TOKEN" in lines[0], done.stderr
    assert ("not a loopback address" in lines[0]) == (host == "0.0.0.0")
    with socket.socket() as s:  # nothing listens
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_http_on_a_busy_port_exits_1_saying_what_to_do(workspace: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([str(VISION_AGENT), "mcp", "--http", "--port", str(port)], cwd=workspace,
                              env=server_env(workspace, VISION_AGENT_MCP_TOKEN=TOKEN), capture_output=True, text=True,
                              timeout=60)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "cannot listen on 127.0.0.1" in last and "another port" in last, done.stderr
    assert "serving" not in done.stderr and "Traceback" not in done.stderr
