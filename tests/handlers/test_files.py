"""Images both ways: attachments fetched with the bot token into image blocks; frames uploaded into the thread."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from bot.events import AgentEvent, EventType
from handlers.render import TurnRenderer
from handlers.threads import Conversation
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot, start_bot, stop_bot


def jpeg(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "JPEG")
    return buf.getvalue()


def image_blocks(body: dict) -> list[dict]:
    return [b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "image"]


def tool_results(body: dict) -> list[dict]:
    return [b for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


async def test_attached_image_is_fetched_with_bot_token_and_reaches_the_model(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("A red square."))
    file = slack_api.add_file("square.jpg", jpeg())
    ts, _ = slack_api.mention("what is this?", files=[file])
    await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts)
    downloads = slack_api.calls_to("files.download")
    assert [(d.params["file_id"], d.token) for d in downloads] == [(file["id"], slack_api.bot_token)]
    body = anthropic_api.ok_requests[0].body
    assert len(image_blocks(body)) == 1 and image_blocks(body)[0]["source"]["media_type"] == "image/jpeg"
    assert file["id"] in json.dumps(body["messages"][-1])  # the model can hand the file id to tools
    saved = list((slack_bot.settings.workspace / "uploads" / "slack").glob(f"{file['id']}_*"))
    assert len(saved) == 1 and saved[0].read_bytes() == slack_api.file_bytes[file["id"]]


async def test_non_image_is_refused_politely_in_the_thread(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    pdf = slack_api.add_file("report.pdf", b"%PDF-1.4 not an image", "application/pdf")
    ts, _ = slack_api.mention("", files=[pdf])
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    assert "only look at images" in note.params["text"] and "report.pdf" in note.params["text"]
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    assert slack_api.calls_to("files.download") == [] and anthropic_api.requests == []


async def test_oversized_image_is_refused_before_download(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, slack={"max_image_bytes": 1000})
    try:
        anthropic_api.enqueue(text("I only have your words."))
        big = slack_api.add_file("big.jpg", jpeg(400, 400))
        ts, _ = slack_api.mention("look", files=[big])
        posts = await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts, count=2)
        assert "over my" in posts[0].params["text"] and posts[1].params["text"] == "I only have your words."
        assert slack_api.calls_to("files.download") == [] and image_blocks(anthropic_api.ok_requests[0].body) == []
    finally:
        await stop_bot(running)


async def test_frame_event_is_uploaded_into_the_same_thread(slack_api: SlackEmulator) -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    ts, _ = slack_api.mention("count faces")
    conv = Conversation(slack_api.team_id, "C0GENERAL", ts, ts, "U0HUMAN")
    frame = jpeg(32, 32)
    await TurnRenderer(client, conv, {}).handle(AgentEvent(EventType.FRAME, {"image": frame, "caption": "1 face"}))
    upload = slack_api.calls_to("files.upload")[0]
    done = slack_api.calls_to("files.completeUploadExternal")[0]
    assert upload.body == frame
    assert (done.params["channel_id"], done.params["thread_ts"], done.params["initial_comment"]) == ("C0GENERAL", ts, "1 face")
    assert [f["id"] for f in done.params["files"]] == [upload.params["file_id"]]


@pytest.mark.slow
async def test_run_inference_by_file_id_finds_the_face_and_uploads_the_frame(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    from skimage import data

    buf = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buf, "JPEG")
    photo = slack_api.add_file("astronaut.jpg", buf.getvalue())
    anthropic_api.enqueue(tool_use(("run_inference", {"image": photo["id"], "model_id": "builtin/faces"})),
                          text("I see one face."))
    ts, _ = slack_api.mention("how many faces?", files=[photo])
    await slack_api.await_for("chat.postMessage", lambda c: c.params.get("text") == "I see one face.", timeout=90)
    result = tool_results(anthropic_api.ok_requests[1].body)[0]
    assert not result.get("is_error") and "face" in json.dumps(result["content"])
    shared = slack_api.calls_to("files.completeUploadExternal")
    assert [(s.params["channel_id"], s.params["thread_ts"]) for s in shared] == [("C0GENERAL", ts)]
    uploaded = slack_api.calls_to("files.upload")[0].body
    assert Image.open(io.BytesIO(uploaded)).format == "JPEG"
