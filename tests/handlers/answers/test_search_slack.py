"""Search the past in Slack: `/vision search` and the model's search_events answer with Slack's table block (time,
camera, what, link) and the best frames as image blocks, checked by the emulator as Slack checks them."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

from PIL import Image

from bot.backends.base import Detection, InferenceResult
from bot.monitoring.alerts import Alert
from bot.monitoring.search.describe import Tracks, describe
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_socket import Envelope
from tests.fakes.slack_tables import check_table
from tests.fakes.waits import patience
from tests.fixtures.slack import RunningBot, await_answers

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"
WORKING = ":hourglass_flowing_sand:"


def seed(bot: RunningBot, walkers: int = 7) -> list[str]:
    """People seen on the real street frame over the last hours, tracked as they walked (alternately left and right),
    each event recorded through the router as the monitor does; their words as `describe` made them."""
    jpeg = (DATA / "street.jpg").read_bytes()
    boxes = json.loads((DATA / "street.json").read_text())["people"]
    w, h = Image.open(io.BytesIO(jpeg)).size
    router, now, out = bot.runtime.router, time.time(), []
    for i, box in enumerate(boxes[:walkers]):
        tracks, way = Tracks(), -1 if i % 2 == 0 else 1
        for step in range(6):
            moved = (box[0] + way * 9 * step, box[1], box[2] + way * 9 * step, box[3])
            r = InferenceResult((Detection("person", 0.9, moved, i + 1),), frame=jpeg, image_size=(w, h))
            tracks.saw("street", r, now + 0.4 * step)
        seen = describe("street", r, ("person",), tracks, jpeg)
        router.record(Alert("street", "class_appears:person", "person appears", {"person": 1}, now - 3600 * (i + 1),
                            jpeg, "p1", seen=seen.text, box=seen.box))
        out.append(seen.text)
    assert bot.runtime.events.pictures is not None and bot.runtime.events.pictures.flush(patience(30))
    return out


async def reply_to(slack_api: SlackEmulator, env: Envelope) -> dict[str, Any]:
    acked = await slack_api.await_ack(env)
    assert acked.ack_error is None, acked.ack_error
    if not acked.ack_payload["text"].startswith(WORKING):
        return acked.ack_payload
    rid = env.payload["response_url"].rsplit("/", 1)[-1]
    [post] = await slack_api.await_for("response_url", lambda c: c.params["rid"] == rid)
    assert post.ok, post.error  # Slack would have refused the blocks
    return post.params


def shown(slack_api: SlackEmulator, blocks: list[dict[str, Any]]) -> list[str]:
    """The file ids of the message's image blocks, each an image whose upload was completed (as Slack requires)."""
    ids = [b["slack_file"]["id"] for b in blocks if b["type"] == "image"]
    assert all(i in slack_api.completed and slack_api.files[i]["mimetype"] == "image/jpeg" for i in ids), ids
    return ids


async def test_vision_search_answers_with_a_table_of_moments_and_their_frames(
    slack_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    said = seed(slack_bot)
    reply = await reply_to(slack_api, slack_api.slash("search someone walking left"))
    [table] = [b for b in reply["blocks"] if b["type"] == "table"]
    check_table(table)
    header, *rows = table["rows"]
    assert [c["text"] for c in header] == ["#", "Time", "Camera", "What", "Link"]
    whats = [r[3]["text"] for r in rows]
    left = [s for s in said if "walking left" in s]
    assert left and set(whats[:len(left)]) == set(left), whats  # those who walked left come first
    assert 1 <= len(shown(slack_api, reply["blocks"])) <= 3  # the best frames inside the answer
    assert "walking left" in reply["text"]  # the text fallback says them too


async def test_a_search_limited_to_a_time_or_a_camera_and_one_that_cannot_be_read(
    slack_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    seed(slack_bot, walkers=5)
    reply = await reply_to(slack_api, slack_api.slash("search person since=150m"))
    rows = next(b for b in reply["blocks"] if b["type"] == "table")["rows"][1:]
    assert len(rows) == 2  # the events of the last 2 h 30 min: 1 h and 2 h ago
    reply = await reply_to(slack_api, slack_api.slash("search person camera=gate"))
    assert "no events from camera 'gate'" in reply["text"] and "street" in reply["text"] and "\n" not in reply["text"]
    reply = await reply_to(slack_api, slack_api.slash("search person limit=500"))
    assert "limit must be" in reply["text"] and "50" in reply["text"]
    reply = await reply_to(slack_api, slack_api.slash("search blue bicycle since=2m"))
    assert "Nothing in the event log matches" in reply["text"]


async def test_the_models_search_shows_the_moments_in_the_thread(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    said = seed(slack_bot)
    anthropic_api.enqueue(tool_use(("search_events", {"query": "someone walking right", "limit": 5})),
                          text("Three people walked right this morning; the frames are in this thread."))
    ts, _ = slack_api.mention("when did someone walk right past the camera?")
    said_in_thread = await await_answers(slack_api, "C0GENERAL", ts, count=2)  # the moments, then the answer
    assert any("the frames are in this thread" in a for a in said_in_thread), said_in_thread
    posts = [m for m in slack_api.messages("C0GENERAL", ts) if any(
        b.get("type") == "table" for b in m.get("blocks") or [])]
    assert len(posts) == 1, slack_api.messages("C0GENERAL", ts)
    table = next(b for b in posts[0]["blocks"] if b["type"] == "table")
    whats = [r[3]["text"] for r in table["rows"][1:]]
    right = [s for s in said if "walking right" in s]
    assert len(whats) <= 5 and set(whats[:len(right)]) == set(right), whats
    assert shown(slack_api, posts[0]["blocks"])
    results = [c for r in anthropic_api.requests for m in r.body.get("messages", []) if m["role"] == "user"
               and isinstance(m["content"], list) for c in m["content"] if c.get("type") == "tool_result"]
    assert results, [r.body.get("messages") for r in anthropic_api.requests]
    result = results[-1]
    assert any(c["type"] == "image" for c in result["content"])  # the model sees the best frame too
