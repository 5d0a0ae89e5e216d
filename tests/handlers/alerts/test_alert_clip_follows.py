"""An alert goes out at once with its frame; its clip follows into its thread, or one line says it failed; a tier-2
summary ready before its alert was posted still lands in that alert (one top-level message per event)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator

from bot.monitoring.alerts import Alert
from handlers.alerts.sink import no_clip_line
from handlers.state.threads import session_key
from tests.bot.monitor_helpers import result
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.fixtures.street import faces_rule, push, street_camera, street_frames
from tests.tools.fake_backend import FakeBackend

EVENT_AT = 15  # the frame where two people are "seen": the rule fires on it


@contextlib.asynccontextmanager
async def clip_bot(slack_env: dict[str, str], slack_api: SlackEmulator, **clips: float) -> AsyncIterator[RunningBot]:
    running = await start_bot({**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}, slack_api,
                              backend=FakeBackend(), clips={"fps": 5.0, **clips})
    running.runtime.monitor.add_rule(faces_rule())
    try:
        yield running
    finally:
        await running.runtime.monitor.flush()
        await stop_bot(running)


def top_level(slack_api: SlackEmulator) -> list[dict]:
    return [m for m in slack_api.messages("C0ALERTS") if m.get("thread_ts", m["ts"]) == m["ts"]]


def is_alert(call: ApiCall) -> bool:
    return call.params.get("channel") == "C0ALERTS" and "blocks" in call.params


async def test_the_alert_is_posted_before_its_clip_is_cut_and_the_clip_lands_in_its_thread(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    async with clip_bot(slack_env, slack_api, seconds_before=1.0, seconds_after=3.0) as running:
        clips_dir = running.settings.workspace / "clips"
        handle, frames = street_camera(), street_frames()

        def camera() -> None:  # the street camera at its 10 fps, on its own thread
            for i, frame in enumerate(frames):
                push(running, handle, 2 if i >= EVENT_AT else 0, frame)
                time.sleep(0.1)

        feeding = asyncio.create_task(asyncio.to_thread(camera))
        [post] = await slack_api.await_for("chat.postMessage", is_alert)
        assert not list(clips_dir.glob("*.mp4")), "the alert went out before its clip was cut"
        ts = slack_api.messages("C0ALERTS")[0]["ts"]
        [shared] = await slack_api.await_for("files.completeUploadExternal", lambda c: "channel_id" in c.params)
        await feeding
        await running.runtime.monitor.flush()

    assert (shared.params["channel_id"], shared.params["thread_ts"]) == ("C0ALERTS", ts)
    [clip] = clips_dir.glob("*.mp4")
    assert any(u.body == clip.read_bytes() for u in slack_api.calls_to("files.upload"))
    assert slack_api.calls.index(post) < slack_api.calls.index(shared)
    assert "clip" not in json.dumps(post.params["blocks"]).lower()  # the alert promised no clip
    assert len(top_level(slack_api)) == 1  # the clip is in the thread, not a second message
    thread = slack_api.messages("C0ALERTS", ts)[1:]
    assert [m.get("files", [{}])[0].get("name") for m in thread] == [clip.name]
    seeded = json.dumps(running.runtime.sessions.history(session_key(running.bot.team_id, "C0ALERTS", ts)))
    assert f"clip id {clip.stem}" in seeded  # a reply in the thread can ask for the clip's frames


async def test_a_summary_ready_before_its_alert_was_posted_lands_in_that_alert(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    async with clip_bot(slack_env, slack_api, seconds_before=1.0, seconds_after=0.5) as running:
        handle, frames = street_camera(), street_frames()
        push(running, handle, 2, frames[EVENT_AT])  # decided here; its delivery waits for the loop
        [ev] = running.runtime.monitor.news.pending()
        assert not slack_api.calls_to("chat.postMessage", is_alert)
        summary = Alert("street", "heartbeat", "Two people at the door: a delivery.", summary="a delivery",
                        about=(ev.alert_id,))  # as the heartbeat builds it
        assert await running.runtime.router.dispatch(summary) is None
        [post] = slack_api.calls_to("chat.postMessage", is_alert)
        ts = slack_api.messages("C0ALERTS")[0]["ts"]
        [update] = await slack_api.await_for("chat.update")

    assert (update.params["channel"], update.params["ts"]) == ("C0ALERTS", ts)
    assert "a delivery" in json.dumps(update.params["blocks"]) and "a delivery" not in json.dumps(post.params)
    [message] = top_level(slack_api)
    assert message["edited"] and "a delivery" in json.dumps(message["blocks"])


async def test_a_clip_that_cannot_be_cut_is_one_line_in_the_alert_thread(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    async with clip_bot(slack_env, slack_api, seconds_before=1.0, seconds_after=0.2) as running:
        handle = street_camera()
        running.runtime.monitor.on_result(handle, result(faces=2, frame=street_frames()[EVENT_AT]))  # no frames kept
        await running.runtime.monitor.flush()
        [post] = await slack_api.await_for("chat.postMessage", is_alert)
        ts = slack_api.messages("C0ALERTS")[0]["ts"]
        [note] = await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts)

    assert note.params["text"] == no_clip_line("too few frames were kept around the event to cut one")
    assert not slack_api.calls_to("files.completeUploadExternal", lambda c: "channel_id" in c.params)
    assert [m["text"] for m in slack_api.messages("C0ALERTS", ts)[1:]] == [note.params["text"]]
    assert "clip" not in json.dumps(post.params["blocks"]).lower()
