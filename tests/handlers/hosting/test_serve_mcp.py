"""`serve --mcp-port`: MCP over HTTP inside the Slack bot shares its runtime (pipelines, events); refused without a token."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bot.cli.main import main
from tests.bot.mcp.helpers import TOKEN, decoded
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.common import free_port
from tests.fixtures.slack import start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend


async def test_mcp_client_and_slack_bot_share_pipelines(slack_env: dict[str, str], slack_api: SlackEmulator,
                                                        workspace_dir: Path) -> None:
    video = workspace_dir / "door.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42 not really decoded by the fake backend")
    port = free_port()
    running = await start_bot({**slack_env, "VISION_AGENT_MCP_TOKEN": TOKEN}, slack_api, backend=FakeBackend(),
                              mcp={"serve_port": port})
    try:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, trust_env=False, timeout=30)
        async with http, streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (r, w, _), \
                ClientSession(r, w) as session:
            await session.initialize()
            text, _, err = decoded(await session.call_tool("start_pipeline", {
                "video_reference": str(video), "pipeline_name": "door", "model_id": "builtin/faces"}))
            assert not err, text
            assert [h.name for h in running.runtime.pipelines.snapshot()] == ["door"]  # the bot's own manager
            listed, _, _ = decoded(await session.call_tool("list_pipelines", {}))
            assert listed.startswith("door ")
        async with httpx.AsyncClient(trust_env=False) as anon:
            assert (await anon.post(f"http://127.0.0.1:{port}/mcp", json={})).status_code == 401
    finally:
        await stop_bot(running)
    with pytest.raises(httpx.ConnectError):  # stopped with the bot
        async with httpx.AsyncClient(trust_env=False) as anon:
            await anon.post(f"http://127.0.0.1:{port}/mcp", json={})


def test_serve_with_mcp_port_and_no_token_exits_2_with_one_line(
    slack_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in slack_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("VISION_AGENT_MCP_TOKEN", raising=False)
    assert main(["serve", "--mcp-port", str(free_port())]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "VISION_AGENT_MCP_TOKEN" in err[0]
