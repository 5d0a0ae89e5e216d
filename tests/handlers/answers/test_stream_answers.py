"""Answers stream into their thread (chat.startStream/appendStream/stopStream) with a task card per step; where
Slack refuses streaming, or a stream breaks, the answer still arrives once by the post-at-end path."""

from __future__ import annotations

import asyncio
import io
import re
from typing import Any

from PIL import Image

from handlers.transport.mrkdwn import MAX_MENTIONS
from tests.fakes.anthropic_api import FakeAnthropic, stalled, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fakes.waits import patience
from tests.fixtures.slack import RunningBot, answers, await_answers, start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend, result


def stream_chunks(slack: SlackEmulator, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    """Every chunk that reached the streamed messages of a thread, in order."""
    return [c for m in slack.messages(channel, thread_ts) if "stream_mode" in m for c in m["chunks"]]


def tasks(chunks: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(c["id"], c["title"], c["status"]) for c in chunks if c["type"] == "task_update"]


def squeeze(s: str) -> str:
    return re.sub(r"\s+", "", s)


def jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buf, "JPEG")
    return buf.getvalue()


async def test_a_mention_streams_one_message_with_a_task_card_per_step_and_feedback(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    answer = "**Two** cameras are online: the door and the yard."
    anthropic_api.enqueue(tool_use(("think", {"thought": "plan"}), ("list_pipelines", {})), text(answer))
    ts, _ = slack_api.mention("what cameras are there?")
    [reply] = await await_answers(slack_api, "C0GENERAL", ts)
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")  # the turn is over
    [start] = slack_api.calls_to("chat.startStream")
    assert start.params["thread_ts"] == ts and start.params["task_display_mode"] == "timeline"
    assert (start.params["recipient_user_id"], start.params["recipient_team_id"]) == (HUMAN, slack_api.team_id)
    steps = tasks(stream_chunks(slack_api, "C0GENERAL", ts))
    first, think, listing = dict.fromkeys(i for i, _, _ in steps)
    assert steps[:2] == [(first, "Checking what is running now", "in_progress"),
                         (first, "Checking what is running now", "complete")]  # before the model said anything
    assert steps[2:] == [(think, "Thinking it through", "in_progress"), (think, "Thinking it through", "complete"),
                     (listing, "Checking the running pipelines", "in_progress"),
                     (listing, "Checking the running pipelines", "complete")]
    assert reply.count(answer) == 1 and reply.strip() == answer  # markdown as Slack renders it, not mrkdwn
    [stop] = slack_api.calls_to("chat.stopStream")
    assert [b["type"] for b in stop.params["blocks"]] == ["context_actions"]
    assert slack_api.calls_to("chat.postMessage", lambda c: c.params.get("thread_ts") == ts) == []
    deadline = asyncio.get_running_loop().time() + patience(1)  # closed on disk right after the last reaction
    while slack_bot.bot.inflight.open_turns() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    assert slack_bot.bot.inflight.open_turns() == []  # answered, then done


async def test_a_dm_thread_streams_and_a_top_level_dm_is_posted(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Hello there."), text("Threads stream."))
    root, _ = slack_api.dm("hi")
    assert await await_answers(slack_api, "D0HUMAN") == ["Hello there."]  # a stream must be a thread reply
    slack_api.dm("and in a thread?", thread_ts=root)
    assert await await_answers(slack_api, "D0HUMAN", root) == ["Threads stream."]
    [start] = slack_api.calls_to("chat.startStream")
    assert (start.params["channel"], start.params["thread_ts"]) == ("D0HUMAN", root)


async def test_a_channel_refusing_streams_gets_posted_answers_and_is_not_asked_again(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    slack_api.stream_error = "not_allowed"
    anthropic_api.enqueue(tool_use(("think", {"thought": "plan"})), text("First answer."), text("Second answer."))
    ts, _ = slack_api.mention("hello")
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["First answer."]
    slack_api.message("again", thread_ts=ts)
    assert await await_answers(slack_api, "C0GENERAL", ts, count=2) == ["First answer.", "Second answer."]
    tries = [c for c in slack_api.calls if c.method == "chat.startStream"]
    assert [c.error for c in tries] == ["not_allowed"]  # once per channel
    posts = slack_api.calls_to("chat.postMessage", lambda c: c.params.get("thread_ts") == ts)
    assert all(p.params["blocks"][-1]["type"] == "context_actions" for p in posts)
    status = slack_api.calls_to("assistant.threads.setStatus", lambda c: "through" in c.params["status"])
    assert status  # the post-at-end path still says what it is doing


async def test_a_stream_that_breaks_mid_answer_still_delivers_the_answer_once(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    answer = " ".join(f"Camera {i} saw nobody at the door this morning." for i in range(12))
    anthropic_api.enqueue(text(answer, pace=0.03))
    ts, _ = slack_api.mention("report")
    await slack_api.await_for("chat.appendStream", lambda c: any(k["type"] == "markdown_text"
                                                                  for k in c.params["chunks"]))  # the first words
    streaming = next(m for m in slack_api.messages("C0GENERAL", ts) if "stream_mode" in m)
    streaming["streaming"] = False  # Slack ended the stream (as it does with one left idle): appends now fail
    streamed, posted = await await_answers(slack_api, "C0GENERAL", ts, count=2)
    assert 0 < len(streamed) < len(answer) and squeeze(streamed + posted) == squeeze(answer)
    failed = [c for c in slack_api.calls if c.method == "chat.appendStream" and not c.ok]
    assert [c.error for c in failed][:1] == ["message_not_in_streaming_state"]


async def test_a_frame_appears_as_an_image_right_after_its_step(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, backend=FakeBackend(result({"face": 1}, frame=jpeg())))
    try:
        photo = slack_api.add_file("door.jpg", jpeg())
        anthropic_api.enqueue(tool_use(("run_inference", {"image": photo["id"], "model_id": "builtin/faces"})),
                              text("I see one face."))
        ts, _ = slack_api.mention("faces?", files=[photo])
        assert await await_answers(slack_api, "C0GENERAL", ts) == ["I see one face."]
        chunks = stream_chunks(slack_api, "C0GENERAL", ts)
        assert tasks(chunks)[:2] == [("first-image", "Looking at the image", "in_progress"),
                                     ("first-image", "Looking at the image", "complete")]
        chunks = [c for c in chunks if not str(c.get("id")).startswith("first-")]  # the model's steps from here
        kinds = [(c["type"], c.get("status")) for c in chunks]
        assert kinds[:3] == [("task_update", "in_progress"), ("task_update", "complete"), ("blocks", None)]
        assert {k for k, _ in kinds[3:]} == {"markdown_text"}  # the answer after the image
        [image] = chunks[2]["blocks"]
        file = slack_api.files[image["slack_file"]["id"]]
        assert file["mimetype"] == "image/jpeg" and image["alt_text"]
        shared = slack_api.calls_to("files.completeUploadExternal", lambda c: bool(c.params.get("channel_id")))
        assert shared == []  # shown by the image block only, not posted into the thread a second time
    finally:
        await stop_bot(running)


async def test_a_long_answer_is_split_within_slack_limits_into_streamed_messages(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    answer = "\n\n".join(f"## Camera {i}\n" + "All quiet, nothing moved. " * 60 for i in range(30))
    anthropic_api.enqueue(text(answer))
    ts, _ = slack_api.mention("full report please")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", timeout=15)
    got = answers(slack_api, "C0GENERAL", ts)
    assert len(got) == 2 and all(len(m) <= 36_000 for m in got)
    assert squeeze("".join(got)) == squeeze(answer) and "".join(got).count("## Camera ") == 30
    assert got[0].rstrip().endswith("moved.")  # cut between paragraphs, not inside one
    appended = [c["text"] for call in slack_api.calls_to("chat.appendStream") for c in call.params["chunks"]
                if c["type"] == "markdown_text"]
    assert appended and max(map(len, appended)) <= 12_000
    stops = slack_api.calls_to("chat.stopStream")
    assert [bool(s.params.get("blocks")) for s in stops] == [False, True]  # feedback under the last one only


async def test_a_credential_cut_across_streamed_pieces_is_still_masked(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    # Streamed 12 characters at a time, a second apart in Slack: the URL and the token arrive in pieces.
    leaked = ("The door camera is at rtsp://admin:S3cretPass@10.0.0.5/live and my token is "
              f"{slack_api.bot_token} - do not share it. ") * 3
    anthropic_api.enqueue(text(leaked, pace=0.06))
    ts, _ = slack_api.mention("config?")
    [reply] = await await_answers(slack_api, "C0GENERAL", ts, timeout=15)
    sent = [c["text"] for call in slack_api.calls if "Stream" in call.method
            for c in call.params.get("chunks") or [] if c["type"] == "markdown_text"]
    assert len(sent) > 2  # it did stream in several appends
    for secret in ("S3cretPass", slack_api.bot_token):
        assert secret not in "".join(sent) and secret not in reply
    assert reply.count("rtsp://admin:***@10.0.0.5/live") == 3


async def test_a_model_call_retried_mid_stream_says_so_and_the_answer_follows_whole(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    answer = "The yard camera saw a fox at 02:10 and nothing else all night."
    anthropic_api.enqueue(stalled(text(answer), events=6), text(answer))  # goes silent after a few words
    running = await start_bot(slack_env, slack_api, llm={"request_timeout": 1, "max_retries": 1})
    try:
        ts, _ = slack_api.mention("anything at night?")
        [reply] = await await_answers(slack_api, "C0GENERAL", ts, timeout=20)
    finally:
        await stop_bot(running)
    # What streamed from the void attempt stays (Slack cannot take it back), marked; then the answer, once, whole.
    before, marker, after = reply.partition("starting the answer again")
    assert marker and before.startswith("The yard") and after.strip(" _)\n") == answer
    assert reply.count(answer) == 1 and len(anthropic_api.ok_requests) == 2


async def test_a_broadcast_the_model_writes_notifies_nobody_streamed_or_posted(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """Anyone can ask the model to write <!channel>: neither path may hand Slack a broadcast."""
    hostile = "Attention <!channel> and <!everyone>: @here the door is open."
    for stream in (True, False):
        anthropic_api.enqueue(text(hostile))
        running = await start_bot(slack_env, slack_api, slack={"stream_answers": stream})
        try:
            ts, _ = slack_api.mention(f"say exactly: {hostile}")
            [reply] = await await_answers(slack_api, "C0GENERAL", ts)
        finally:
            await stop_bot(running)
        sent = " ".join(str(c.params) for c in slack_api.calls if c.method.startswith("chat."))
        assert "<!channel>" not in sent and "<!everyone>" not in sent and "@here" not in sent, stream
        assert reply.replace("\u2060", "").strip() == hostile  # the words are all there, readable
        assert slack_api.calls_to("chat.startStream") if stream else not slack_api.calls_to("chat.startStream")
        slack_api.calls.clear()


async def _mentioned_answer(slack_env: dict[str, str], slack_api: SlackEmulator, question: str,
                            stream: bool) -> tuple[str, str]:
    """Mention the bot once in #general (a bot started for it, streaming or not): (its answer, every chat.* call's
    parameters as text, i.e. all it sent)."""
    running = await start_bot(slack_env, slack_api, slack={"stream_answers": stream})
    try:
        ts, _ = slack_api.mention(question)
        [reply] = await await_answers(slack_api, "C0GENERAL", ts)
    finally:
        await stop_bot(running)
    return reply, " ".join(str(c.params) for c in slack_api.calls if c.method.startswith("chat."))


async def test_a_reply_naming_dozens_of_people_notifies_only_a_few(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """A model steered into listing the whole member list would page each of them: past a few, mentions go inert."""
    people = [f"U0PAGE{i:03d}" for i in range(25)]
    hostile = "Paging " + ", ".join(f"<@{u}>" for u in people) + " — the dock camera is down."
    for stream in (True, False):
        anthropic_api.enqueue(text(hostile))
        reply, sent = await _mentioned_answer(slack_env, slack_api, "page everyone about the dock", stream)
        live = {u for u in people if f"<@{u}>" in sent}
        assert len(live) <= MAX_MENTIONS and live == set(people[:len(live)]), (stream, sorted(live))
        assert all(u in reply for u in people)  # every name still readable
        slack_api.calls.clear()


async def test_mentions_written_slowly_over_many_appends_still_notify_only_a_few(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """The limit holds for the whole answer, not for each piece a stream sends: a model writing its list of people
    slowly would otherwise get a fresh few per append."""
    people = [f"U0SLOW{i:03d}" for i in range(20)]
    hostile = "Paging " + ", ".join(f"<@{u}>" for u in people) + " now."
    anthropic_api.enqueue(text(hostile, pace=0.12))  # about 3.5 s of writing: several appends of a second each
    reply, sent = await _mentioned_answer(slack_env, slack_api, "page everyone, slowly", True)
    appends = slack_api.calls_to("chat.appendStream")
    assert len(appends) >= 3  # it did stream in pieces
    live = {u for u in people if f"<@{u}>" in sent}
    assert len(live) <= MAX_MENTIONS, sorted(live)
    assert all(u in reply for u in people)


async def test_text_before_and_after_a_step_stays_two_paragraphs(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """The model's sentence before a tool call and its answer after it were glued ("…the photo.The people…")."""
    anthropic_api.enqueue(tool_use(("think", {"thought": "count them"}), text="Let me look at the photo."),
                          tool_use(("list_pipelines", {}), text="Two people.\n"),  # ends on one newline
                          text("The people stand by the door."))
    ts, _ = slack_api.mention("who is there?")
    [reply] = await await_answers(slack_api, "C0GENERAL", ts)
    assert "Let me look at the photo.\n\nTwo people.\n\nThe people stand by the door." in reply, reply
    assert reply.count("The people stand by the door.") == 1


async def test_a_shared_file_is_shown_under_the_name_its_sender_gave_it(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """The saved copy carries Slack's file id for uniqueness (F…_astronaut.jpg); captions, alt text, step outcomes and
    what the model reads name the file as it was shared, whether the model passes the id or the saved path."""
    from pathlib import Path

    running = await start_bot(slack_env, slack_api, backend=FakeBackend(result({"person": 1}, frame=jpeg())))
    try:
        photo = slack_api.add_file("astronaut on the moon.jpg", jpeg())
        saved = Path(slack_env["VISION_AGENT_WORKSPACE"]) / "uploads" / "slack" / f"{photo['id']}_astronaut_on_the_moon.jpg"
        anthropic_api.enqueue(tool_use(("run_inference", {"image": photo["id"], "model_id": "builtin/people"})),
                              tool_use(("run_inference", {"image": str(saved), "model_id": "builtin/people"})),
                              text("One person."))
        ts, _ = slack_api.mention("who is this?", files=[photo])
        assert await await_answers(slack_api, "C0GENERAL", ts) == ["One person."]
        assert saved.is_file()  # the id stays on disk, where two files of one name must not collide
        chunks = stream_chunks(slack_api, "C0GENERAL", ts)
        images = [b for c in chunks if c["type"] == "blocks" for b in c["blocks"] if b["type"] == "image"]
        outcomes = [c["output"] for c in chunks if c["type"] == "task_update" and c.get("output")]
        shown = [i["alt_text"] for i in images] + [i["title"]["text"] for i in images] + outcomes
        assert len(images) == 2 and len(outcomes) == 3  # the first step (the image received), then two tool calls
        assert all("astronaut on the moon.jpg" in s and photo["id"] not in s for s in shown), shown
        results = [b["content"] for r in anthropic_api.ok_requests[1:] for b in r.body["messages"][-1]["content"]
                   if b.get("type") == "tool_result"]
        assert len(results) == 2 and all("astronaut on the moon.jpg" in str(c) for c in results), results
    finally:
        await stop_bot(running)


async def test_a_frame_that_cannot_join_the_stream_is_posted_before_the_answer_that_follows_it(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """A 429 storm outlasting the client's retries refuses the frame's unshared upload: the frame goes into the
    thread as a file instead. The streamed message holding the step was older than that file, and the answer
    went on into it, so the thread read answer-then-frame. The streamed message now ends before the file; the
    answer streams after it."""
    from handlers.transport.delivery import RATE_LIMIT_RETRIES

    running = await start_bot(slack_env, slack_api, backend=FakeBackend(result({"face": 1}, frame=jpeg())))
    try:
        photo = slack_api.add_file("door.jpg", jpeg())
        anthropic_api.enqueue(tool_use(("run_inference", {"image": photo["id"], "model_id": "builtin/faces"})),
                              text("Answer: I see one face."))
        # the first upload the turn makes is the frame's (the photo is read, not uploaded): it is refused for good
        slack_api.rate_limit("files.getUploadURLExternal", calls=RATE_LIMIT_RETRIES + 1, retry_after=0)
        ts, _ = slack_api.mention("faces?", files=[photo])
        await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
        thread = [m for m in slack_api.messages("C0GENERAL", ts) if m.get("user") == slack_api.bot_user_id]
        shown = ["frame" if m.get("files") else "answer" if "Answer:" in m.get("text", "") else "step"
                 for m in thread]
        assert shown.count("frame") == 1 and shown.count("answer") == 1
        assert shown.index("frame") < shown.index("answer"), shown
        assert "Answer: I see one face." in "".join(m.get("text", "") for m in thread)
    finally:
        await stop_bot(running)
