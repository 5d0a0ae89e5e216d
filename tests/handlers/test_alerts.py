"""Alerts: posted top-level to the routed channel with frame and buttons; Mute 1 h and Stop pipeline clicks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from bot.alerts import Alert
from handlers.alerts import MUTE_ACTION, STOP_ACTION
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.handlers.test_files import jpeg
from tests.tools.fake_backend import FakeBackend


@pytest.fixture
async def alert_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    env = {**slack_env, "VISION_AGENT_ALERT_CHANNEL": "#general"}
    running = await start_bot(env, slack_api, backend=FakeBackend())
    try:
        yield running
    finally:
        await stop_bot(running)


def alert(camera: str = "lobby", pipeline_id: str | None = "p1", **kw) -> Alert:
    return Alert(camera=camera, rule="person_count", text="2 people in the lobby after hours",
                 counts={"person": 2}, frame=jpeg(32, 24), pipeline_id=pipeline_id, **kw)


def buttons(call) -> dict[str, str]:
    actions = next(b for b in call.params["blocks"] if b["type"] == "actions")
    return {e["action_id"]: e["text"]["text"] for e in actions["elements"]}


async def test_alert_goes_top_level_to_the_camera_route_with_frame_and_buttons(
    alert_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    router = alert_bot.runtime.router
    router.set_route("C0ALERTS", camera="lobby")
    assert await router.dispatch(alert()) is None
    post = (await slack_api.await_for("chat.postMessage"))[0]
    assert post.params["channel"] == "C0ALERTS" and "thread_ts" not in post.params
    assert buttons(post) == {STOP_ACTION: "Stop pipeline", MUTE_ACTION: "Mute 1 h"}
    assert "2 people in the lobby after hours" in json.dumps(post.params["blocks"])
    shared = (await slack_api.await_for("files.completeUploadExternal"))[0]
    ts = slack_api.messages("C0ALERTS")[0]["ts"]
    assert (shared.params["channel_id"], shared.params["thread_ts"]) == ("C0ALERTS", ts)
    # another camera falls back to the default channel (VISION_AGENT_ALERT_CHANNEL)
    await router.dispatch(alert(camera="yard"))
    second = (await slack_api.await_for("chat.postMessage", count=2))[1]
    assert second.params["channel"] == "#general"


async def test_mute_click_suppresses_the_next_alert(alert_bot: RunningBot, slack_api: SlackEmulator) -> None:
    router = alert_bot.runtime.router
    await router.dispatch(alert())
    await slack_api.await_for("files.completeUploadExternal")
    ts = slack_api.messages("C0GENERAL")[0]["ts"]
    value = json.dumps({"camera": "lobby", "pipeline": "p1"})
    env = await slack_api.await_ack(slack_api.click(MUTE_ACTION, value, "C0GENERAL", ts))
    assert env.ack_latency < 3.0
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    assert "muted alerts from *lobby*" in note.params["text"]
    router.cooldown_seconds = 0  # only the mute can hold the next one back
    assert await router.dispatch(alert()) == "muted"
    await asyncio.sleep(0.1)
    assert len(slack_api.calls_to("chat.postMessage", lambda c: "blocks" in c.params)) == 1


async def test_stop_click_stops_the_pipeline_through_the_command_core(
    alert_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    pipelines = alert_bot.runtime.pipelines
    video = alert_bot.settings.workspace / "lobby.mp4"
    video.write_bytes(b"x")
    handle = await pipelines.start(str(video), "lobby", model_id="builtin/people")
    await alert_bot.runtime.router.dispatch(alert(pipeline_id=handle.pipeline_id))
    await slack_api.await_for("files.completeUploadExternal")
    ts = slack_api.messages("C0GENERAL")[0]["ts"]
    value = json.dumps({"camera": "lobby", "pipeline": handle.pipeline_id})
    await slack_api.await_ack(slack_api.click(STOP_ACTION, value, "C0GENERAL", ts))
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    assert "Stopped" in note.params["text"] or "stopped" in note.params["text"]
    assert pipelines.resolve("lobby").status == "stopped"


async def test_reply_under_an_alert_is_about_that_alert(
    alert_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    await alert_bot.runtime.router.dispatch(alert())
    await slack_api.await_for("files.completeUploadExternal")
    ts = slack_api.messages("C0GENERAL")[0]["ts"]
    anthropic_api.enqueue(text("Probably the cleaning crew."))
    slack_api.message("who is that?", thread_ts=ts)  # no mention needed under our own alert
    reply = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("text") == "Probably the cleaning crew."))[0]
    assert reply.params["thread_ts"] == ts
    history = json.dumps(anthropic_api.ok_requests[0].body["messages"])
    assert "2 people in the lobby after hours" in history and "who is that?" in history
