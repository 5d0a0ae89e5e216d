"""/vision over socket mode: ephemeral answers inside Slack's 3 s, usage for garbage, snapshots to the channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.pipelines.request import StartRequest
from handlers.listeners import commands
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.inference import make_video
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.fixtures.slow_start import SlowStartBackend
from tests.handlers.transport.test_files import jpeg
from tests.tools.fake_backend import result


@pytest.fixture
def slow_backend() -> SlowStartBackend:
    return SlowStartBackend()


@pytest.fixture
async def bot_with_fake_backend(slack_env: dict[str, str], slack_api: SlackEmulator,
                                slow_backend: SlowStartBackend) -> AsyncIterator[RunningBot]:
    running = await start_bot(slack_env, slack_api, backend=slow_backend)
    try:
        yield running
    finally:
        await stop_bot(running)


async def test_help_is_answered_ephemerally_in_the_ack(slack_bot: RunningBot, slack_api: SlackEmulator) -> None:
    env = await slack_api.await_ack(slack_api.slash("help"))
    assert env.ack_latency is not None and env.ack_latency < 3.0
    assert env.ack_payload["response_type"] == "ephemeral"
    assert "/vision &lt;command&gt;" in env.ack_payload["text"] and "snapshot NAME_OR_ID" in env.ack_payload["text"]
    assert slack_api.calls_to("chat.postMessage") == []  # nothing public


@pytest.mark.parametrize("garbage", ["frobnicate the cameras", "start", "'unclosed quote"])
async def test_garbage_gets_usage_not_a_crash(slack_bot: RunningBot, slack_api: SlackEmulator, garbage: str) -> None:
    env = await slack_api.await_ack(slack_api.slash(garbage))
    assert env.ack_payload["response_type"] == "ephemeral"
    assert "Usage" in env.ack_payload["text"]


async def test_route_sets_the_alert_channel_for_a_camera(bot_with_fake_backend: RunningBot, slack_api: SlackEmulator,
                                                         slow_backend: SlowStartBackend) -> None:
    slack_bot = bot_with_fake_backend
    slow_backend.release.set()
    video = slack_bot.settings.workspace / "lobby.mp4"
    video.write_bytes(b"x")
    await slack_bot.runtime.pipelines.start(StartRequest(str(video), "lobby", model_id="builtin/people", owner=HUMAN))
    elsewhere = await slack_api.await_ack(slack_api.slash("route <#C0ALERTS|alerts> camera=lobby"))  # from #general
    assert "you can route alerts to this channel" in elsewhere.ack_payload["text"]
    assert slack_bot.runtime.router.channel_for("lobby") != "C0ALERTS"
    env = await slack_api.await_ack(slack_api.slash("route <#C0ALERTS|alerts> camera=lobby", channel="C0ALERTS"))
    assert "lobby" in env.ack_payload["text"]
    assert slack_bot.runtime.router.channel_for("lobby") == "C0ALERTS"


async def test_slow_start_acks_in_time_then_answers_via_response_url(
    bot_with_fake_backend: RunningBot, slack_api: SlackEmulator, monkeypatch: pytest.MonkeyPatch,
    slow_backend: SlowStartBackend
) -> None:
    monkeypatch.setattr(commands, "ACK_BUDGET", 0.2)
    video = bot_with_fake_backend.settings.workspace / "door.mp4"
    video.write_bytes(b"not really a video")
    env = await slack_api.await_ack(slack_api.slash(f"start {video} name=door"))
    assert env.ack_latency < 3.0 and "loading the detector" in env.ack_payload["text"]  # while start still waits
    assert slack_api.calls_to("response_url") == []
    slow_backend.release.set()
    answer = (await slack_api.await_for("response_url"))[0]
    assert answer.params["response_type"] == "ephemeral" and "Started *door*" in answer.params["text"]


async def test_a_start_refused_on_its_frame_never_said_it_was_loading_the_detector(
    bot_with_fake_backend: RunningBot, slack_api: SlackEmulator, slow_backend: SlowStartBackend
) -> None:
    slow_backend.release.set()  # a start that got through would answer at once
    video = make_video(bot_with_fake_backend.settings.workspace / "door.mp4", size=(320, 180), frames=4)
    env = await slack_api.await_ack(slack_api.slash(f"start {video} name=door model=builtin/people line=900,0,900,500"))
    said = [env.ack_payload["text"]]
    if "Working on" in said[0]:  # a slow machine: the answer comes by response_url
        said.append((await slack_api.await_for("response_url"))[0].params["text"])
    assert "lies outside this stream's 320x180 frames" in said[-1]
    assert not any("loading the detector" in text or "Starting" in text for text in said), said
    assert bot_with_fake_backend.runtime.pipelines.snapshot() == []


async def test_snapshot_uploads_the_latest_frame_to_the_channel(
    bot_with_fake_backend: RunningBot, slack_api: SlackEmulator, slow_backend: SlowStartBackend
) -> None:
    slow_backend.release.set()  # no slow start here
    video = bot_with_fake_backend.settings.workspace / "door.mp4"
    video.write_bytes(b"not really a video")
    pipelines = bot_with_fake_backend.runtime.pipelines
    handle = await pipelines.start(StartRequest(str(video), "door", model_id="builtin/people"))
    frame = jpeg(40, 30)
    pipelines.backend.emit(handle.pipeline_id, result({"person": 2}, frame=frame))
    env = await slack_api.await_ack(slack_api.slash("snapshot door", channel="C0OTHER"))
    assert "door" in env.ack_payload["text"]
    shared = (await slack_api.await_for("files.completeUploadExternal"))[0]
    assert shared.params["channel_id"] == "C0OTHER" and "thread_ts" not in shared.params
    assert slack_api.calls_to("files.upload")[0].body == frame


async def test_a_channel_and_user_named_cli_are_slack_people_not_the_operator(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    slack_api.add_channel("cli", "cli")
    running = await start_bot(slack_env, slack_api, slack={"allowed_users": ["U0BOSS"]})
    try:
        env = await slack_api.await_ack(slack_api.slash("route <#C0ALERTS|alerts> camera=lobby", channel="cli",
                                                        user="cli"))
        assert "Only <@U0BOSS> may change" in env.ack_payload["text"]
        assert running.runtime.router.channel_for("lobby") != "C0ALERTS"
    finally:
        await stop_bot(running)
