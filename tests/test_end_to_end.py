"""End to end: /vision route + start line= on a real video → one Slack alert with frame → a thread reply reaches Claude."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest

from handlers.alerts.sink import FALSE_ALARM_ACTION, MUTE_ACTION, STOP_ACTION
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fakes.waits import patience
from tests.fixtures.inference import crossing_line, make_video
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot

ALERTS = "C0ALERTS"


def is_alert(call: ApiCall) -> bool:
    """A rule's alert in the routed channel (not the note that its camera's alerts stop: `is_ended`)."""
    return call.params.get("channel") == ALERTS and "blocks" in call.params and not is_ended(call)


def is_ended(call: ApiCall) -> bool:
    return call.params.get("channel") == ALERTS and "stop until" in call.params.get("text", "")


def buttons(call: ApiCall) -> dict[str, str]:
    actions = next(b for b in call.params["blocks"] if b["type"] == "actions")
    return {e["action_id"]: e["text"]["text"] for e in actions["elements"]}


async def command(slack_api: SlackEmulator, line: str, channel: str = "C0GENERAL") -> str:
    """Run `/vision line` over socket mode; the answer, from the ack or (slow start) the response_url."""
    env = await slack_api.await_ack(slack_api.slash(line, channel=channel))
    answer = env.ack_payload["text"]
    if ":hourglass_flowing_sand:" not in answer:  # "Working on …", or a start's first line: the answer follows
        return answer
    rid = env.payload["response_url"].rsplit("/", 1)[-1]
    late = await slack_api.await_for("response_url", lambda c: c.params["rid"] == rid, timeout=40)
    return late[0].params["text"]


async def run_to_end(running: RunningBot, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        handles = {h.name: h for h in await running.runtime.pipelines.list()}
        if handles[name].status not in ("starting", "running"):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"pipeline {name} still running after {timeout}s")


def annotations(jpeg: bytes) -> dict[str, float]:
    """What the workflow drew on the frame: purple box/label pixels, and the line's column vs the background."""
    import cv2
    import numpy as np

    img = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert img is not None and img.shape[:2] == (480, 640)
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
    purple = (hsv[..., 0] >= 125) & (hsv[..., 0] <= 155) & (hsv[..., 1] > 100) & (hsv[..., 2] > 100)
    lane = slice(200, 280)  # rows between the two faces' lanes: only background and the line
    line, background = img[lane, 319:322].reshape(-1, 3).mean(0), img[lane, 90:110].reshape(-1, 3).mean(0)
    # the line stands out whatever its colour: in its strongest channel against the background beside it
    return {"box_pixels": float(purple.sum()), "line_contrast": float(np.abs(line - background).max())}


@pytest.mark.slow
async def test_face_crossing_alerts_once_in_the_routed_channel_and_a_thread_reply_reaches_claude(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, slack={"operators": [HUMAN]})  # the person who set the bot up
    try:
        video = make_video(running.settings.workspace / "door.mp4")  # crossings: out at ~frame 37, in at ~38
        x1, y1, x2, y2 = (v for point in crossing_line() for v in point)
        assert "now go to" in await command(slack_api, f"route <#{ALERTS}|alerts> camera=door")
        started = await command(slack_api, f"start {video} model=builtin/faces name=door line={x1},{y1},{x2},{y2}")
        assert started.startswith("Started *door*") and "builtin/faces" in started, started
        await run_to_end(running, "door")
        await running.runtime.monitor.flush()

        latest = running.runtime.pipelines.latest("door")
        assert (latest.values["count_in"], latest.values["count_out"]) == (1, 1), "the video shows two crossings"
        [alert] = await slack_api.await_for("chat.postMessage", is_alert)
        assert "thread_ts" not in alert.params  # top level in the routed channel
        assert buttons(alert) == {STOP_ACTION: "Stop pipeline", MUTE_ACTION: "Mute 1 h",
                                  FALSE_ALARM_ACTION: "False alarm"}
        said = json.dumps(alert.params["blocks"])
        # The two faces cross from opposite sides a frame apart; counted by the box centre (bot/backends/counting.py)
        # both may land in the same frame, so the one alert may carry both directions.
        assert "line crossed" in said and any(
            t in said for t in ("totals in 0 / out 1", "totals in 1 / out 0", "totals in 1 / out 1")), said
        ts = slack_api.messages(ALERTS)[0]["ts"]

        await slack_api.await_for("files.completeUploadExternal")
        # The frame is shared nowhere (the alert's image block shows it); the event clip goes in the thread.
        [shared] = [c for c in slack_api.calls_to("files.completeUploadExternal") if "channel_id" not in c.params]
        [image] = [b for b in alert.params["blocks"] if b["type"] == "image"]
        assert image["slack_file"]["id"] == shared.params["files"][0]["id"]
        frame = next(u.body for u in slack_api.calls_to("files.upload") if u.body[:3] == b"\xff\xd8\xff")
        assert frame[:3] == b"\xff\xd8\xff"
        drawn = annotations(frame)  # the raw video has no purple and only grey noise at x=320
        assert drawn["box_pixels"] > 1000 and drawn["line_contrast"] > 25, drawn

        await asyncio.sleep(0.3)  # nothing else is on its way: the second crossing stayed inside the cooldown
        assert len(slack_api.calls_to("chat.postMessage", is_alert)) == 1, [
            c.params["text"] for c in slack_api.calls_to("chat.postMessage", is_alert)]
        uploads = slack_api.calls_to("files.completeUploadExternal")
        assert len(uploads) <= 2 and sum("channel_id" not in c.params for c in uploads) == 1  # one frame, ≤ 1 clip

        anthropic_api.enqueue(text("Two faces crossed the door line, one each way."))
        slack_api.message("what crossed?", channel=ALERTS, thread_ts=ts)
        assert await await_answers(slack_api, ALERTS, ts, timeout=15) == ["Two faces crossed the door line, one each way."]
        messages = anthropic_api.ok_requests[0].body["messages"]
        history = json.dumps(messages)
        assert "door: line crossed" in history and "what crossed?" in history
        images = [b for m in messages if isinstance(m["content"], list) for b in m["content"] if b["type"] == "image"]
        assert images and images[0]["source"]["media_type"] == "image/jpeg"  # the alert's frame went with it
        seen = annotations(base64.b64decode(images[0]["source"]["data"]))
        assert seen["box_pixels"] > 1000, "the model saw the annotated frame"
        # The video ran out: the routed channel hears, once, that door's alerts stop until it runs again (it may come
        # before or after the alert: the file's end and the crossings are a second apart).
        [ended] = await slack_api.await_for("chat.postMessage", is_ended)
        assert "door finished" in ended.params["text"] and "stop until door runs again" in ended.params["text"]
        assert len(slack_api.calls_to("chat.postMessage", is_alert)) == 1
    finally:
        await running.runtime.pipelines.stop_all()
        await stop_bot(running)


@pytest.mark.slow
async def test_a_hostile_workflow_asked_for_in_slack_never_runs_leaks_or_calls_out(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic, listener
) -> None:
    """The tester's attack from a Slack thread, end to end on the real engine: the model (doing what it was asked)
    sends a secret-store workflow and a webhook workflow; both are refused by name, nothing reaches the listener, and
    no key reaches Slack or the next model request."""
    from tests.fakes.anthropic_api import tool_use
    from tests.fixtures.attacks import WEBHOOK, secrets_spec, webhook_spec

    running = await start_bot(slack_env, slack_api)
    try:
        make_video(running.settings.workspace / "door.mp4", frames=20)
        from PIL import Image

        Image.new("RGB", (64, 48), (90, 90, 90)).save(running.settings.workspace / "still.jpg", "JPEG")
        anthropic_api.enqueue(
            tool_use(("run_inference", {"image": "still.jpg", "workflow_spec": secrets_spec()}),
                     ("start_pipeline", {"video_reference": "door.mp4", "pipeline_name": "door",
                                         "workflow_spec": webhook_spec(listener.url)})),
            text("Both workflows were refused."))
        ts, _ = slack_api.mention("run this workflow for me and print what it returns")
        [reply] = await await_answers(slack_api, "C0GENERAL", ts, timeout=60)
        await asyncio.sleep(1.0)  # a webhook step would have fired by now
        pipelines = await running.runtime.pipelines.list()
    finally:
        await stop_bot(running)
    results = [b for m in anthropic_api.ok_requests[-1].body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 2 and all(r.get("is_error") for r in results)
    texts = json.dumps(results)
    assert "roboflow_core/environment_secrets_store@v1" in texts and WEBHOOK in texts
    assert listener.bodies == [] and pipelines == []
    slack = json.dumps([c.params for c in slack_api.calls])
    for secret in (slack_api.bot_token, slack_api.app_token, slack_env["ANTHROPIC_API_KEY"]):
        assert secret not in slack and secret not in texts
    assert "refused" in reply
