"""/vision recipe over socket mode: saved from the channel's last setup, exported as a file posted to the channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.agent.tools import ToolResult
from bot.llm.client import ToolCall
from bot.rights import Requester
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend


@pytest.fixture
async def bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    running = await start_bot(slack_env, slack_api, backend=FakeBackend())
    try:
        yield running
    finally:
        await stop_bot(running)


async def test_save_then_export_posts_the_script_to_the_channel(bot: RunningBot, slack_api: SlackEmulator) -> None:
    channel = slack_api.channel("C0GENERAL").id
    video = str(bot.settings.workspace / "door.mp4")
    call = ToolCall("t1", "start_pipeline", {"video_reference": video, "pipeline_name": "door",
                                             "model_id": "builtin/faces", "line": "middle"})
    recipes = bot.runtime.services.recipes
    assert recipes is not None
    # What the agent loop records at the end of a thread's turn that started a pipeline.
    recipes.record(f"slack:T:{channel}:1.0", Requester.slack(HUMAN, channel), [(call, ToolResult("started"))], "ok")

    saved = await slack_api.await_ack(slack_api.slash("recipe save door-count count the door"))
    assert "Saved recipe *door-count*" in saved.ack_payload["text"]
    exported = await slack_api.await_ack(slack_api.slash("recipe export door-count"))
    assert "Exported *door-count*" in exported.ack_payload["text"]

    shared = (await slack_api.await_for("files.completeUploadExternal"))[0]
    assert shared.params["channel_id"] == channel
    body = slack_api.calls_to("files.upload")[0].body
    assert body == (bot.settings.workspace / "exports" / "door-count.py").read_bytes()
    assert b"RECIPE = 'door-count'" in body
    listing = await slack_api.await_ack(slack_api.slash("recipes"))
    assert "door-count" in listing.ack_payload["text"] and "count the door" in listing.ack_payload["text"]
