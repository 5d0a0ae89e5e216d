"""Mentions, thread follow-ups, DMs, ordering and dedupe — through real slack_bolt against the Slack emulator."""

from __future__ import annotations

import asyncio
import json
import time

from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot


def in_thread(channel: str, ts: str):
    return lambda c: c.params.get("channel") == channel and c.params.get("thread_ts") == ts


def user_texts(request_body: dict) -> list[str]:
    """Every text a user message in one Messages API request carried."""
    out = []
    for m in request_body["messages"]:
        if m["role"] != "user":
            continue
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out += [b["text"] for b in content if b.get("type") == "text"]
    return out


async def test_mention_gets_status_quickly_then_reply_in_its_thread(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(tool_use(("think", {"thought": "plan"})), text("**Two** cameras are online.", delay=0.3))
    sent = time.time()
    ts, envelopes = slack_api.mention("what cameras are there?")
    reaction = (await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "eyes"))[0]
    status = (await slack_api.await_for("assistant.threads.setStatus"))[0]
    assert reaction.params["timestamp"] == ts and reaction.time - sent < 1.0
    assert status.params["thread_ts"] == ts and status.time - sent < 1.0
    reply = (await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", ts)))[0]
    assert "*Two* cameras are online." in json.dumps(reply.params["blocks"])
    tool_status = await slack_api.await_for("assistant.threads.setStatus", lambda c: "running" in c.params["status"])
    assert tool_status[0].params["status"] == "is running think…"
    done = await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    assert done[0].params["timestamp"] == ts
    assert [e.ack_latency is not None and e.ack_latency < 0.5 for e in envelopes] == [True, True]
    # the mention arrived twice (app_mention + message.channels) and was answered once
    await asyncio.sleep(0.2)
    assert len(slack_api.calls_to("chat.postMessage", in_thread("C0GENERAL", ts))) == 1
    assert len(anthropic_api.ok_requests) == 2


async def test_follow_up_in_thread_needs_no_mention_and_keeps_history(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("The lobby camera is online."), text("It has been up since 9:00."))
    ts, _ = slack_api.mention("is the lobby camera up?")
    await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", ts))
    slack_api.message("since when?", thread_ts=ts)
    await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", ts), count=2)
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
    assert slack_api.calls_to("chat.postMessage") == [] and anthropic_api.requests == []


async def test_two_fast_messages_in_one_thread_are_answered_in_order(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("first answer"))
    ts, _ = slack_api.mention("start")
    await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", ts))
    # the first of the two is slow: a parallel turn would answer the second one first
    anthropic_api.enqueue(text("answer one", delay=0.4), text("answer two"))
    slack_api.message("question one", thread_ts=ts)
    slack_api.message("question two", thread_ts=ts)
    replies = await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", ts), count=3)
    assert [r.params["text"] for r in replies[1:]] == ["answer one", "answer two"]
    assert user_texts(anthropic_api.ok_requests[2].body)[-1] == "question two"


async def test_other_threads_proceed_while_one_is_busy(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    replies = {"slow question": text("slow answer", delay=1.0), "quick question": text("quick answer")}
    anthropic_api.handler = lambda body: replies[user_texts(body)[-1]]
    slow_ts, _ = slack_api.mention("slow question")
    await asyncio.sleep(0.05)
    quick_ts, _ = slack_api.mention("quick question")
    first = (await slack_api.await_for("chat.postMessage"))[0]
    assert first.params["thread_ts"] == quick_ts
    await slack_api.await_for("chat.postMessage", in_thread("C0GENERAL", slow_ts))


async def test_retried_event_is_answered_once(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("hello there"))
    ts, envelopes = slack_api.mention("hi")
    for env in envelopes:
        await slack_api.await_ack(slack_api.redeliver(env, reason="http_timeout"))
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    await asyncio.sleep(0.2)
    assert len(slack_api.calls_to("chat.postMessage", in_thread("C0GENERAL", ts))) == 1
    assert len(anthropic_api.ok_requests) == 1


async def test_dms_top_level_share_a_session_threaded_dm_is_its_own(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("one"), text("two"), text("three"))
    first_ts, _ = slack_api.dm("remember the word banana")
    await slack_api.await_for("chat.postMessage", count=1)
    slack_api.dm("what word?")
    await slack_api.await_for("chat.postMessage", count=2)
    slack_api.dm("new topic in a thread", thread_ts=first_ts)
    posts = await slack_api.await_for("chat.postMessage", count=3)
    assert [p.params.get("thread_ts") for p in posts] == [None, None, first_ts]
    assert any("banana" in t for t in user_texts(anthropic_api.ok_requests[1].body))
    assert not any("banana" in t for t in user_texts(anthropic_api.ok_requests[2].body))
