"""Alerts: one top-level message in the routed channel, frame inside, three buttons; Mute 1 h and Stop clicks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from bot.monitoring.alerts import Alert
from bot.pipelines.request import StartRequest
from handlers.alerts.sink import FALSE_ALARM_ACTION, MUTE_ACTION, STOP_ACTION
from handlers.transport.mrkdwn import MAX_MENTIONS
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot
from tests.handlers.transport.test_files import jpeg
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


async def test_alert_is_one_top_level_message_in_the_camera_route_with_its_frame_inside_and_three_buttons(
    alert_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    router = alert_bot.runtime.router
    router.set_route("C0ALERTS", camera="lobby")
    sent = alert()
    assert await router.dispatch(sent) is None
    post = (await slack_api.await_for("chat.postMessage"))[0]
    assert post.params["channel"] == "C0ALERTS" and "thread_ts" not in post.params
    assert buttons(post) == {STOP_ACTION: "Stop pipeline", MUTE_ACTION: "Mute 1 h", FALSE_ALARM_ACTION: "False alarm"}
    said = json.dumps(post.params["blocks"])
    assert said.count("2 people in the lobby after hours") == 1  # the text once
    assert post.params["text"] == "Alert from lobby: 2 people in the lobby after hours"  # the notification fallback
    context = next(b for b in post.params["blocks"] if b["type"] == "context")
    assert "rule `person_count`" in context["elements"][0]["text"] and "2 person" in context["elements"][0]["text"]
    # the frame: uploaded without a channel, then shown by the message's image block
    [shared] = slack_api.calls_to("files.completeUploadExternal")
    assert "channel_id" not in shared.params and "thread_ts" not in shared.params
    [image] = [b for b in post.params["blocks"] if b["type"] == "image"]
    assert image["slack_file"]["id"] == shared.params["files"][0]["id"]
    assert slack_api.file_bytes[image["slack_file"]["id"]] == sent.frame
    await asyncio.sleep(0.2)
    assert len(slack_api.messages("C0ALERTS")) == 1  # no thread upload repeating the line
    # another camera falls back to the default channel (VISION_AGENT_ALERT_CHANNEL)
    await router.dispatch(alert(camera="yard"))
    second = (await slack_api.await_for("chat.postMessage", count=2))[1]
    assert second.params["channel"] == "#general"


async def test_mute_click_suppresses_the_next_alert(alert_bot: RunningBot, slack_api: SlackEmulator) -> None:
    router = alert_bot.runtime.router
    video = alert_bot.settings.workspace / "lobby.mp4"
    video.write_bytes(b"x")  # the clicker runs the lobby pipeline: its alerts are theirs to mute
    await alert_bot.runtime.pipelines.start(StartRequest(str(video), "lobby", model_id="builtin/people", owner=HUMAN))
    await router.dispatch(alert())
    await slack_api.await_for("chat.postMessage")
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
    handle = await pipelines.start(StartRequest(str(video), "lobby", model_id="builtin/people", owner=HUMAN))
    await alert_bot.runtime.router.dispatch(alert(pipeline_id=handle.pipeline_id))
    await slack_api.await_for("chat.postMessage")
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
    await slack_api.await_for("chat.postMessage")
    ts = slack_api.messages("C0GENERAL")[0]["ts"]
    anthropic_api.enqueue(text("Probably the cleaning crew."))
    slack_api.message("who is that?", thread_ts=ts)  # no mention needed under our own alert
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["Probably the cleaning crew."]
    history = json.dumps(anthropic_api.ok_requests[0].body["messages"])
    assert "2 people in the lobby after hours" in history and "who is that?" in history


async def test_a_heartbeat_alert_written_from_a_frame_pages_only_a_few(
    alert_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    """The heartbeat's reply is model text about frames anyone can hold a sign up to: posted as an alert (line,
    summary and notification text), it notifies a few people at most, like an answer in a thread."""
    people = [f"U0SIGN{i:03d}" for i in range(12)]
    reply = "Sign at the door says: " + " ".join(f"<@{u}>" for u in people) + " <!here> come now"
    router = alert_bot.runtime.router
    router.set_route("C0ALERTS", camera="lobby")
    await router.dispatch(Alert("lobby", "heartbeat", reply, {}, summary=reply[:200]))
    post = (await slack_api.await_for("chat.postMessage"))[0]
    sent = json.dumps(post.params["blocks"]) + post.params["text"]
    live = {u for u in people if f"<@{u}>" in sent}
    assert len(live) <= MAX_MENTIONS and "<!here>" not in sent, sorted(live)
    assert all(u in sent for u in people)  # still readable


async def test_a_member_cannot_mute_the_operators_camera(alert_bot: RunningBot, slack_api: SlackEmulator) -> None:
    router = alert_bot.runtime.router
    await router.dispatch(alert())
    await slack_api.await_for("chat.postMessage")
    ts = slack_api.messages("C0GENERAL")[0]["ts"]
    env = await slack_api.await_ack(slack_api.click(MUTE_ACTION, json.dumps({"camera": "lobby"}), "C0GENERAL", ts))
    assert env.ack_latency < 3.0
    [told] = await slack_api.await_for("response_url")
    assert "lobby's alerts are the operator's to mute, or an operator's" in told.params["text"]
    assert router.muted_until("lobby") is None
