"""Mentions, thread follow-ups, DMs, ordering and dedupe — through real slack_bolt against the Slack emulator."""

from __future__ import annotations

import asyncio
import json
import re
import time

from handlers.answers.feedback import STOP_TURN_ACTION
from tests.fakes.anthropic_api import FakeAnthropic, error, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot, answers, await_answers, start_bot, stop_bot


def in_thread(channel: str, ts: str):
    return lambda c: c.params.get("channel") == channel and c.params.get("thread_ts") == ts


def user_texts(request_body: dict) -> list[str]:
    """Every text a user message in one Messages API request carried; a person's words without their author marker."""
    out = []
    for m in request_body["messages"]:
        if m["role"] != "user":
            continue
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out += [_unmarked(b["text"]) for b in content if b.get("type") == "text"]
    return out


def _unmarked(text: str) -> str:
    found = re.fullmatch(r'<message from_user="[^"]*" name="[^"]*">\n(.*)\n</message>', text, re.S)
    return found.group(1) if found else text


async def test_mention_gets_its_first_step_quickly_then_reply_in_its_thread(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(tool_use(("think", {"thought": "plan"})), text("**Two** cameras are online.", delay=0.3))
    sent = time.time()
    ts, envelopes = slack_api.mention("what cameras are there?")
    reaction = (await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "eyes"))[0]
    [start] = await slack_api.await_for("chat.startStream", in_thread("C0GENERAL", ts))
    assert reaction.params["timestamp"] == ts and reaction.time - sent < 1.0
    assert start.time - sent < 1.0
    # the streamed message opens with the turn's first step (handlers/answers/opening.py), not the model's output
    assert [(c["title"], c["status"]) for c in start.params["chunks"]] == [("Checking what is running now",
                                                                            "in_progress")]
    [reply] = await await_answers(slack_api, "C0GENERAL", ts)
    assert reply == "**Two** cameras are online."  # markdown, as Slack renders it in a streamed message
    # the step is named for people (bot/agent/steps.py), not by its tool id: a task card in the streamed answer
    cards = [(c["title"], c["status"]) for m in slack_api.messages("C0GENERAL", ts) if "stream_mode" in m
             for c in m["chunks"] if c["type"] == "task_update"]
    assert cards[:3] == [("Checking what is running now", "in_progress"), ("Checking what is running now", "complete"),
                         ("Thinking it through", "in_progress")]
    assert slack_api.calls_to("assistant.threads.setStatus") == []  # the streamed message says what it does
    done = await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    assert done[0].params["timestamp"] == ts
    assert [e.ack_latency is not None and e.ack_latency < 3.0 for e in envelopes] == [True, True]
    # the mention arrived twice (app_mention + message.channels) and was answered once
    await asyncio.sleep(0.2)
    assert answers(slack_api, "C0GENERAL", ts) == [reply] and len(slack_api.calls_to("chat.startStream")) == 1
    assert len(anthropic_api.ok_requests) == 2


async def test_follow_up_in_thread_needs_no_mention_and_keeps_history(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("The lobby camera is online."), text("It has been up since 9:00."))
    ts, _ = slack_api.mention("is the lobby camera up?")
    await await_answers(slack_api, "C0GENERAL", ts)
    slack_api.message("since when?", thread_ts=ts)
    assert await await_answers(slack_api, "C0GENERAL", ts, count=2) == ["The lobby camera is online.",
                                                                        "It has been up since 9:00."]
    second = anthropic_api.ok_requests[1].body
    texts = user_texts(second)
    assert any("is the lobby camera up?" in t for t in texts) and any("since when?" in t for t in texts)
    assert any(m["role"] == "assistant" and "lobby camera is online" in json.dumps(m["content"])
               for m in second["messages"])


async def test_plain_channel_message_outside_our_threads_is_ignored(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    ts, env = slack_api.message("lunch anyone?")
    await slack_api.await_ack(env)
    slack_api.other_bot_message("deploy finished", thread_ts=ts)
    await asyncio.sleep(0.3)
    assert answers(slack_api, "C0GENERAL") == [] and anthropic_api.requests == []


async def test_two_fast_messages_in_one_thread_are_answered_in_order(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("first answer"))
    ts, _ = slack_api.mention("start")
    await await_answers(slack_api, "C0GENERAL", ts)
    # the first of the two is slow: a parallel turn would answer the second one first
    anthropic_api.enqueue(text("answer one", delay=0.4), text("answer two"))
    slack_api.message("question one", thread_ts=ts)
    slack_api.message("question two", thread_ts=ts)
    replies = await await_answers(slack_api, "C0GENERAL", ts, count=3)
    assert replies[1:] == ["answer one", "answer two"]
    assert user_texts(anthropic_api.ok_requests[2].body)[-1] == "question two"


async def test_other_threads_proceed_while_one_is_busy(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    replies = {"slow question": text("slow answer", delay=1.0), "quick question": text("quick answer")}
    anthropic_api.handler = lambda body: replies[user_texts(body)[-1]]
    slow_ts, _ = slack_api.mention("slow question")
    await asyncio.sleep(0.05)
    quick_ts, _ = slack_api.mention("quick question")
    assert await await_answers(slack_api, "C0GENERAL", quick_ts) == ["quick answer"]
    assert answers(slack_api, "C0GENERAL", slow_ts) == []  # still busy, and it held nobody up
    assert await await_answers(slack_api, "C0GENERAL", slow_ts) == ["slow answer"]


async def test_retried_event_is_answered_once(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("hello there"))
    ts, envelopes = slack_api.mention("hi")
    for env in envelopes:
        await slack_api.await_ack(slack_api.redeliver(env, reason="http_timeout"))
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    await asyncio.sleep(0.2)
    assert answers(slack_api, "C0GENERAL", ts) == ["hello there"]
    assert len(anthropic_api.ok_requests) == 1


async def test_dms_top_level_share_a_session_threaded_dm_is_its_own(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("one"), text("two"), text("three"))
    first_ts, _ = slack_api.dm("remember the word banana")
    await await_answers(slack_api, "D0HUMAN", count=1)
    slack_api.dm("what word?")
    await await_answers(slack_api, "D0HUMAN", count=2)
    slack_api.dm("new topic in a thread", thread_ts=first_ts)
    assert await await_answers(slack_api, "D0HUMAN", count=3) == ["one", "two", "three"]
    assert answers(slack_api, "D0HUMAN", first_ts) == ["three"]  # the first two went to the DM itself
    assert any("banana" in t for t in user_texts(anthropic_api.ok_requests[1].body))
    assert not any("banana" in t for t in user_texts(anthropic_api.ok_requests[2].body))


async def test_threads_and_their_history_survive_a_restart(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Noted: the code word is heron."), text("It was heron."))
    first = await start_bot(slack_env, slack_api)
    try:
        ts, _ = slack_api.mention("the code word is heron")
        await await_answers(slack_api, "C0GENERAL", ts)
    finally:
        await stop_bot(first)
    second = await start_bot(slack_env, slack_api)  # same workspace, new process state
    try:
        slack_api.message("what was the code word?", thread_ts=ts)  # no mention: the thread is still ours
        assert (await await_answers(slack_api, "C0GENERAL", ts, count=2))[1] == "It was heron."
        assert any("heron" in t for t in user_texts(anthropic_api.ok_requests[1].body)[:-1])
    finally:
        await stop_bot(second)


async def test_edits_and_our_own_echoes_are_not_answered(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("hello"))
    ts, _ = slack_api.mention("hi")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    await slack_api.await_ack(slack_api.edit("C0GENERAL", ts, f"<@{slack_api.bot_user_id}> hi, edited"))
    await asyncio.sleep(0.2)
    echoes = [e for e in slack_api.envelopes.values() if e.payload.get("event", {}).get("bot_id")]
    assert echoes and all(e.acked_at for e in echoes)  # Slack sent our reply back to us; we acked, not answered
    assert answers(slack_api, "C0GENERAL") == ["hello"] and len(anthropic_api.requests) == 1


async def test_long_answer_posted_at_the_end_is_split_within_slack_limits(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    answer = "\n\n".join(f"## Camera {i}\n" + "All quiet, nothing moved. " * 60 for i in range(30))
    anthropic_api.enqueue(text(answer))
    running = await start_bot(slack_env, slack_api, slack={"stream_answers": False})  # the post-at-end path
    try:
        ts, _ = slack_api.mention("full report please")
        await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    finally:
        await stop_bot(running)
    # A slow machine may add the "Working on it… Stop" line (a turn past 3 s): it is not part of the answer.
    posts = [p for p in slack_api.calls_to("chat.postMessage", in_thread("C0GENERAL", ts))
             if STOP_TURN_ACTION not in str(p.params.get("blocks"))]
    pieces = [b["text"] for p in posts for b in p.params["blocks"] if b["type"] == "markdown"]
    assert len(posts) > 1 and len(pieces) == len(posts) and all(len(s) <= 12_000 for s in pieces)
    # Slack renders the markdown itself (markdown block): nothing converted, nothing lost, in order
    assert "".join(pieces).count("## Camera ") == 30
    assert " ".join("".join(pieces).split()) == " ".join(answer.split())
    assert [b["type"] for b in posts[-1].params["blocks"]][-1] == "context_actions"  # feedback under the last
    assert all("context_actions" not in json.dumps(p.params["blocks"]) for p in posts[:-1])


async def test_model_failure_ends_with_a_line_and_a_warning_reaction(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(*[error(400, message="bad request")] * 3)
    ts, _ = slack_api.mention("hello")
    done = await slack_api.await_for("reactions.add", lambda c: c.params["name"] in ("warning", "white_check_mark"))
    assert done[0].params["name"] == "warning"
    note = slack_api.calls_to("chat.postMessage", in_thread("C0GENERAL", ts))[0]
    assert note.params["text"].startswith(":warning:")


async def test_status_refused_falls_back_to_reactions(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    # Without the first step, the status line is what says the bot is at work until the answer streams.
    running = await start_bot(slack_env, slack_api, slack={"first_step": False})
    try:
        slack_api.status_error = "not_allowed"
        anthropic_api.enqueue(text("fine"), text("still fine"))
        ts, _ = slack_api.mention("status?")
        await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
        slack_api.message("again", thread_ts=ts)
        assert await await_answers(slack_api, "C0GENERAL", ts, count=2) == ["fine", "still fine"]
        failed = [c for c in slack_api.calls if c.method == "assistant.threads.setStatus"]
        assert len(failed) == 1 and not failed[0].ok  # asked once, then left alone
    finally:
        await stop_bot(running)


async def test_without_an_api_key_the_bot_says_so_and_commands_still_work(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    env = {k: v for k, v in slack_env.items() if k != "ANTHROPIC_API_KEY"}
    running = await start_bot(env, slack_api)
    try:
        ts, _ = slack_api.mention("hello?")
        note = (await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", ts)))[0]
        assert "ANTHROPIC_API_KEY" in note.params["text"]
        ack = await slack_api.await_ack(slack_api.slash("help"))
        assert "Usage" in ack.ack_payload["text"]
    finally:
        await stop_bot(running)
