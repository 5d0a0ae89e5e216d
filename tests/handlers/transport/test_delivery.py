"""Slack delivery under Slack's real failure modes: 429s with Retry-After, storms across many threads."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

from bot.monitoring.alerts import Alert
from tests.fakes.anthropic_api import FakeAnthropic, Reply, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.waits import patience
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.handlers.transport.test_files import jpeg
from tests.tools.fake_backend import FakeBackend

THREADS = 20


def bot_posts(slack_api: SlackEmulator, channel: str, root: str) -> list[dict[str, Any]]:
    """The bot's messages in one thread as Slack stored them, in the order Slack accepted them."""
    return [m for m in slack_api.messages(channel, root) if m.get("user") == slack_api.bot_user_id]


def shown(post: dict[str, Any]) -> list[str]:
    """What one bot message shows, in order: "frame" for an image (uploaded file, or a streamed image block),
    else its text (a streamed message's whole markdown, after its images)."""
    if post.get("files"):
        return ["frame"]
    images = ["frame" for c in post.get("chunks") or [] if c["type"] == "blocks"]
    return images + [post["text"]]


def reactions(slack_api: SlackEmulator, channel: str, ts: str) -> set[str]:
    by = slack_api.find_message(channel, ts).get("reactions_by", {})
    return {name for name, users in by.items() if slack_api.bot_user_id in users}


async def settled(slack_api: SlackEmulator, channel: str, roots: list[str], timeout: float) -> None:
    """Wait until every root message carries a final reaction (✅ or ⚠️) and no 👀."""
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        if all(reactions(slack_api, channel, ts) & {"white_check_mark", "warning"} and
               "eyes" not in reactions(slack_api, channel, ts) for ts in roots):
            return
        await asyncio.sleep(0.2)


def inspect_then_answer(body: dict[str, Any]) -> Reply:
    """The model: run inference on the thread's picture (a frame is shown), then answer naming the thread."""
    last = body["messages"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    if any(b.get("type") == "tool_result" for b in blocks):
        asked = " ".join(b.get("text", "") for m in body["messages"] if m["role"] == "user"
                         for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "text")
        tag = re.search(r"thread (\d+)", asked)
        return text(f"One face in thread {tag.group(1) if tag else '?'}.")
    photo = re.search(r"\bF\d{8}\b", json.dumps(body["messages"]))
    return tool_use(("run_inference", {"image": photo.group(0) if photo else "", "model_id": "builtin/faces"}))


async def test_one_429_on_the_answer_is_retried_and_the_user_sees_no_error(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Two cameras are online."))
    slack_api.rate_limit("chat.startStream", calls=1, retry_after=1)
    ts, _ = slack_api.mention("what cameras are there?")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", timeout=15)
    posts = bot_posts(slack_api, "C0GENERAL", ts)
    assert [p["text"] for p in posts] == ["Two cameras are online."] and not posts[0]["streaming"]
    assert [c.error for c in slack_api.calls if c.method == "chat.startStream"] == ["ratelimited", None]
    assert slack_bot.bot.stream_supported == {}  # a 429 is "not now": streaming stays on in the channel
    assert reactions(slack_api, "C0GENERAL", ts) == {"white_check_mark"}
    assert len(anthropic_api.ok_requests) == 1  # the answer already paid for was not asked for again


async def test_storm_of_429s_on_every_method_loses_nothing_across_20_threads(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, backend=FakeBackend())
    try:
        anthropic_api.handler = inspect_then_answer
        photos = [slack_api.add_file(f"cam{i}.jpg", jpeg(32, 24)) for i in range(THREADS)]
        slack_api.rate_limit(seconds=4, retry_after=1)
        roots = [slack_api.mention(f"thread {i}: how many faces?", files=[photos[i]])[0] for i in range(THREADS)]
        await settled(slack_api, "C0GENERAL", roots, timeout=90)
        answers = frames = in_order = 0
        for i, root in enumerate(roots):
            kinds = [kind for p in bot_posts(slack_api, "C0GENERAL", root) for kind in shown(p)]
            answers += kinds.count(f"One face in thread {i}.")
            frames += kinds.count("frame")
            in_order += kinds == ["frame", f"One face in thread {i}."]
        limited = [c for c in slack_api.calls if c.error == "ratelimited"]
        print(f"storm: {answers}/{THREADS} answers, {frames}/{THREADS} frames, {in_order} threads exact, "
              f"{len(limited)} calls answered 429")
        assert (answers, frames, in_order) == (THREADS, THREADS, THREADS)  # no loss, no duplicate, in order
        assert {m for ts in roots for m in reactions(slack_api, "C0GENERAL", ts)} == {"white_check_mark"}
        assert len(limited) >= THREADS  # the storm really hit every thread
    finally:
        await stop_bot(running)


async def test_alerts_during_a_storm_arrive_in_order_each_with_its_frame(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    running = await start_bot({**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}, slack_api,
                              backend=FakeBackend())
    try:
        slack_api.rate_limit(seconds=3, retry_after=1)
        alerts = [Alert(camera=f"cam{i}", rule="person_count", text=f"event {i}", counts={"person": 1},
                        frame=jpeg(32, 24)) for i in range(5)]
        await asyncio.gather(*(running.runtime.router.dispatch(a) for a in alerts))
        roots = [m for m in slack_api.messages("C0ALERTS") if not m.get("thread_ts") or m["thread_ts"] == m["ts"]]
        assert [m["text"] for m in roots] == [f"Alert from cam{i}: event {i}" for i in range(5)]  # in order, once
        for root in roots:  # each alert's frame inside its own message (an uploaded file), nothing in a thread
            [image] = [b for b in root["blocks"] if b["type"] == "image"]
            assert slack_api.file_bytes[image["slack_file"]["id"]][:3] == b"\xff\xd8\xff"
            assert bot_posts(slack_api, "C0ALERTS", root["ts"])[1:] == []
        assert len({b["slack_file"]["id"] for m in roots for b in m["blocks"] if b["type"] == "image"}) == 5
        assert any(c.error == "ratelimited" for c in slack_api.calls)  # the storm hit the alerts
    finally:
        await stop_bot(running)


async def test_ephemeral_reply_through_response_url_survives_a_429(
    slack_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    posted = slack_api.store_message("C0GENERAL", {"user": slack_api.bot_user_id, "text": "an alert"})
    slack_api.rate_limit("response_url", calls=1, retry_after=1)
    await slack_api.await_ack(slack_api.click("vision_mute_camera", "{}", "C0GENERAL", posted["ts"]))
    said = await slack_api.await_for("response_url", timeout=10)
    assert said[0].params["text"] == "This alert has no camera to mute."
    assert [c.ok for c in slack_api.calls if c.method == "response_url"] == [False, True]


async def test_answer_that_finally_cannot_be_posted_still_ends_with_a_warning_not_eyes(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("An answer Slack will not take."))
    # every try, for good: the retries run out, streaming first (this turn falls back), then posting
    slack_api.rate_limit("chat.startStream", "chat.postMessage", retry_after=0)
    ts, _ = slack_api.mention("what cameras are there?")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "warning", timeout=30)
    assert reactions(slack_api, "C0GENERAL", ts) == {"warning"}
    assert bot_posts(slack_api, "C0GENERAL", ts) == []
    tries = [c for c in slack_api.calls if c.method == "chat.postMessage"]
    assert len(tries) >= 2 * 9  # the answer and the error line, each tried 1 + 8 times
    # streaming was tried first, with all its retries (one CI run under load saw two full rounds, 18: not
    # reproduced in 40 loaded runs; what matters here is that nothing was lost silently)
    assert len([c for c in slack_api.calls if c.method == "chat.startStream"]) >= 9
    deadline = time.monotonic() + patience(1)  # the turn is closed on disk right after its last reaction
    while slack_bot.bot.inflight.open_turns() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert slack_bot.bot.inflight.open_turns() == []  # finished: a restart will not post it again
    assert slack_bot.bot.inflight.path.read_text() == ""
