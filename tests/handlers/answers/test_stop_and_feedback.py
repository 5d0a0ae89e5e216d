"""A running turn can be stopped from Slack, cleanly; 👍/👎 under an answer are recorded with its session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from handlers.answers.feedback import FEEDBACK_ACTION, STOP_TURN_ACTION
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, start_bot, stop_bot

STRANGER = "U0STRANGER"


def stop_line(ts: str):
    def match(c: ApiCall) -> bool:
        return c.params.get("thread_ts") == ts and STOP_TURN_ACTION in str(c.params.get("blocks"))
    return match


async def ephemeral(slack_api: SlackEmulator, env: Any) -> str:
    rid = env.payload["response_url"].rsplit("/", 1)[-1]
    return (await slack_api.await_for("response_url", lambda c: c.params["rid"] == rid))[0].params["text"]


def thread_texts(slack_api: SlackEmulator, ts: str) -> list[str]:
    return [str(m.get("text", "")) for m in slack_api.messages("C0GENERAL", ts)]


@pytest.fixture
async def guarded_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    """The bot with an allowlist: only HUMAN may control things, so a stranger's Stop on HUMAN's turn is refused."""
    running = await start_bot(slack_env, slack_api, slack={"allowed_users": [HUMAN]})
    try:
        yield running
    finally:
        await stop_bot(running)


async def test_stop_cancels_a_slow_turn_and_the_thread_goes_on(
    guarded_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    # a tool round first, then a model call that would take a minute: Stop lands mid-call
    anthropic_api.enqueue(tool_use(("think", {"thought": "plan"})), text("too late", delay=60))
    ts, _ = slack_api.mention("describe everything, slowly")
    await slack_api.await_for("chat.postMessage", stop_line(ts), timeout=15)
    line = next(m for m in slack_api.messages("C0GENERAL", ts) if STOP_TURN_ACTION in str(m.get("blocks")))
    stop_ts, value = line["ts"], line["blocks"][1]["elements"][0]["value"]
    env = slack_api.click(STOP_TURN_ACTION, value, "C0GENERAL", stop_ts, user=STRANGER)
    assert "Only <@" in await ephemeral(slack_api, env)  # someone else's turn, without rights: refused
    started = asyncio.get_running_loop().time()
    slack_api.click(STOP_TURN_ACTION, value, "C0GENERAL", stop_ts)
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", timeout=10)
    assert asyncio.get_running_loop().time() - started < 30  # the model call alone would take 60 s
    assert any("Stopped, as you asked" in t for t in thread_texts(slack_api, ts))
    assert not any("too late" in t for t in thread_texts(slack_api, ts))
    assert slack_api.calls_to("chat.delete", lambda c: c.params["ts"] == stop_ts)  # the Stop line is gone
    assert stop_ts not in [m["ts"] for m in slack_api.messages("C0GENERAL", ts)]

    anthropic_api.enqueue(text("Here is the short version."))
    slack_api.message("short version then", thread_ts=ts)
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", count=2, timeout=15)
    assert any("short version." in t for t in thread_texts(slack_api, ts))
    # the next request is well-formed: the stopped turn's tool_use has its result and the turn is closed
    last = anthropic_api.ok_requests[-1].body["messages"]
    roles = [m["role"] for m in last]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False)) and roles[-1] == "user"


async def test_a_quick_answer_is_never_offered_a_stop_line(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Quick."))
    ts, _ = slack_api.mention("hi")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", timeout=10)
    await asyncio.sleep(3.5)
    assert not slack_api.calls_to("chat.postMessage", stop_line(ts))


async def test_thumbs_down_is_recorded_in_the_answers_session(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Three people are in the lobby."))
    ts, _ = slack_api.mention("how many people in the lobby?")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", timeout=10)
    answer = next(m for m in slack_api.messages("C0GENERAL", ts) if FEEDBACK_ACTION in str(m.get("blocks")))
    env = slack_api.click(FEEDBACK_ACTION, "bad", "C0GENERAL", answer["ts"])
    assert env.payload["actions"][0]["type"] == "feedback_buttons"
    assert "what was wrong" in await ephemeral(slack_api, env)
    sessions = slack_bot.runtime.agent.sessions
    key = next(k for k in sessions.keys() if k.endswith(f":C0GENERAL:{ts}"))
    assert sessions.feedback(key) == [{"rating": "bad", "user": HUMAN, "message_ts": answer["ts"]}]
    # a forged click on a message that is none of our threads records nothing
    stray_ts, _ = slack_api.message("unrelated chatter")
    forged = slack_api.click(FEEDBACK_ACTION, "good", "C0GENERAL", stray_ts)
    assert "nothing was recorded" in await ephemeral(slack_api, forged)
    assert len(sessions.feedback(key)) == 1
