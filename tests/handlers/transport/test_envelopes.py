"""Every envelope is acked (unknown types, malformed payloads, random commands); socket drops stay quiet."""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import time
from typing import Any

import pytest

from handlers.transport.socket import AckGate, QuietReconnects
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_socket import Envelope
from tests.fakes.waits import patience
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend

FUZZ = 300
JUNK: list[Any] = [None, 7, 3.5, "", "x" * 300, [], [1, "a"], {}, {"a": {"b": None}}, True, "<@U0BOT>", "\u202e\x00"]
EVENT_TYPES = ["reaction_added", "channel_created", "member_joined_channel", "app_home_opened", "team_join",
               "file_shared", "emoji_changed", "user_change", "pin_added", "app_uninstalled", "tokens_revoked"]
VERBS = ["help", "list", "status", "start", "stop", "pause", "resume", "snapshot", "route", "rule", "rules",
         "unrule", "schedule", "jobs", "unschedule", "frobnicate", ""]


def broken_message(rng: random.Random, kind: str) -> dict[str, Any]:
    """A message or app_mention event with at least one field of the wrong type (or missing)."""
    event: dict[str, Any] = {"type": kind, "channel": "C0GENERAL", "user": "U0HUMAN", "ts": "1700000000.000100",
                             "text": "<@U0BOT> hi", "channel_type": "channel"}
    for field in rng.sample(["channel", "user", "ts", "text", "files", "thread_ts"], k=rng.randint(1, 3)):
        right = list if field == "files" else str
        event[field] = rng.choice([j for j in JUNK if j is not None and not isinstance(j, right)])
    return event


def fuzz_envelope(slack_api: SlackEmulator, rng: random.Random) -> Envelope:
    roll = rng.random()
    if roll < 0.3:
        event = {"type": rng.choice(EVENT_TYPES + [f"made_up_{rng.randint(0, 99)}"]), "user": rng.choice(JUNK)}
        return slack_api.push_event(event)
    if roll < 0.5:
        return slack_api.push_event(broken_message(rng, rng.choice(["message", "app_mention"])))
    if roll < 0.65:
        payload = rng.choice([None, 5, [1, 2], "just text", {"type": "event_callback"}, {"event": "nope"},
                              {"type": "event_callback", "event": [1]}, {"type": "block_actions"},
                              {"command": "/vision", "text": rng.choice(JUNK), "user_id": rng.choice(JUNK),
                               "channel_id": rng.choice(JUNK)}])
        raw: dict[str, Any] = {"envelope_id": slack_api.next_id("raw-"), "payload": payload,
                               "type": rng.choice(["events_api", "interactive", "slash_commands", "mystery"])}
        if rng.random() < 0.3:
            raw.pop(rng.choice(["payload", "type"]))
        return slack_api.push_raw(raw)
    if roll < 0.85:
        words = [rng.choice(VERBS)] + [rng.choice(["lobby", "#general", "rtsp://127.0.0.1:1/x", "every", "5",
                                                    "class_appears", "person", "--", "\u00e9\u00e9", "at", "99:99"])
                                       for _ in range(rng.randint(0, 4))]
        return slack_api.slash(" ".join(words), command=rng.choice(["/vision", "/vision", "/other"]))
    payload = {"type": rng.choice(["block_actions", "view_submission", "shortcut", "message_action", "view_closed"]),
               "user": rng.choice([{"id": "U0HUMAN"}, None, {}]), "team": {"id": slack_api.team_id},
               "actions": [{"action_id": rng.choice(["vision_mute_camera", "vision_stop_pipeline", "other"]),
                            "value": rng.choice(["{}", "not json", "[1]", '{"camera": 5}']), "block_id": "b"}],
               "container": rng.choice([{}, {"channel_id": "C0GENERAL", "message_ts": "1.0"}, None])}
    return slack_api.push("interactive", payload)


@pytest.fixture
async def fuzz_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> Any:
    running = await start_bot(slack_env, slack_api, backend=FakeBackend())
    try:
        yield running
    finally:
        await stop_bot(running)


async def test_hundreds_of_unknown_and_malformed_envelopes_are_all_acked_without_a_crash(
    fuzz_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    rng = random.Random(480)
    slack_api.ack_timeout = 30.0  # no resends: each envelope must be acked the first time
    envelopes = [fuzz_envelope(slack_api, rng) for _ in range(FUZZ)]
    deadline = time.monotonic() + 20
    while any(e.acked_at is None for e in envelopes) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    acked = sum(e.acked_at is not None for e in envelopes)
    print(f"fuzz: {acked}/{FUZZ} envelopes acked")
    assert acked == FUZZ
    assert all(e.retry_attempt == 0 for e in envelopes)
    anthropic_api.enqueue(text("Still here."))  # and the bot still answers
    ts, _ = slack_api.mention("are you ok?")
    assert await await_answers(slack_api, "C0GENERAL", ts, timeout=15) == ["Still here."]
    troubles = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert troubles == [], [r.getMessage()[:200] for r in troubles]


async def test_socket_drop_while_connections_are_rate_limited_reconnects_quietly(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    slack_api.rate_limit("apps.connections.open", calls=2, retry_after=1)
    slack_api.drop()
    await slack_api.await_connected(count=2, timeout=20)
    anthropic_api.enqueue(text("back"))
    ts, _ = slack_api.mention("there?")
    assert await await_answers(slack_api, "C0GENERAL", ts, timeout=15) == ["back"]
    noisy = [r for r in caplog.records if r.name.startswith(("handlers", "slack")) and
             (r.levelno >= logging.WARNING or r.exc_info)]
    assert noisy == [], [r.getMessage()[:200] for r in noisy]


def test_reconnect_failures_are_debug_until_the_socket_stays_down() -> None:
    quiet = QuietReconnects(quiet_for=0.2)
    logger = logging.getLogger("test.quiet")

    def record(msg: str, level: int = logging.ERROR) -> logging.LogRecord:
        try:
            raise ConnectionResetError("reset by peer")
        except ConnectionResetError:
            return logger.makeRecord(logger.name, level, __file__, 1, msg, None, sys.exc_info())

    first = record("Failed to connect (error: reset by peer); Retrying...")
    quiet.filter(first)
    assert (first.levelno, first.exc_info) == (logging.DEBUG, None)
    time.sleep(0.25)
    later = record("Failed to connect (error: reset by peer); Retrying...")
    assert quiet.filter(later) and later.levelno == logging.WARNING and later.exc_info is None
    assert "down for" in later.getMessage()
    again = record("Failed to connect (error: reset by peer); Retrying...")
    quiet.filter(again)
    assert again.levelno == logging.DEBUG  # one warning per quiet period, not one per try
    quiet.filter(record("A new session (s_1) has been established", logging.INFO))
    assert quiet.down_since is None
    other = record("something else entirely", logging.ERROR)
    assert quiet.filter(other) and other.levelno == logging.ERROR  # what is not a reconnect passes untouched


async def test_unknown_event_is_acked_once_and_not_redelivered(slack_bot: RunningBot, slack_api: SlackEmulator) -> None:
    slack_api.ack_timeout = 0.3
    env = slack_api.push_event({"type": "reaction_added", "user": "U0HUMAN", "reaction": "tada"})
    await slack_api.await_ack(env, timeout=5)
    await asyncio.sleep(0.5)
    assert env.retry_attempt == 0 and len(env.sent_at) == 1


async def test_an_event_is_acked_before_it_is_dispatched(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """An Events API ack is empty whatever the listeners do, so it goes out before Bolt's middleware runs: held
    middleware (here: a gate the test opens) cannot delay it. Slash commands keep Bolt's order (their ack has a body)."""
    gate = asyncio.Event()
    dispatched: list[str] = []

    async def held(context: Any, body: dict[str, Any], next: Any) -> None:  # noqa: A002 - Bolt's argument name
        dispatched.append(str(body.get("type")))
        await gate.wait()
        await next()

    slack_bot.bot.app.use(held)
    anthropic_api.enqueue(text("Here."))
    ts, envelopes = slack_api.mention("are you there?")
    for env in envelopes:  # both twins acked while every dispatch is held
        await slack_api.await_ack(env, timeout=patience(10))
    assert not gate.is_set() and all(e.retry_attempt == 0 for e in envelopes)
    gate.set()
    assert await await_answers(slack_api, "C0GENERAL", ts, timeout=patience(15)) == ["Here."]
    assert dispatched.count("event_callback") >= 1  # the mention; its message twin is dropped before Bolt


async def test_feedback_waits_for_the_acks_still_owed() -> None:
    gate = AckGate()
    gate.WAIT = 60.0  # far beyond the test: only the ack may release it
    gate.taken()
    gate.taken()
    waiting = asyncio.ensure_future(gate.wait())
    for _ in range(20):
        await asyncio.sleep(0)
    gate.acked()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()  # one ack still owed
    gate.acked()
    await asyncio.wait_for(waiting, patience(10))
    queue: asyncio.Queue[str] = asyncio.Queue()
    gate.queue = queue
    queue.put_nowait("read, not yet handled")
    waiting = asyncio.ensure_future(gate.wait())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()  # a message read from the socket owes an ack too
    queue.get_nowait()
    await asyncio.wait_for(waiting, patience(10))
    gate.WAIT = 0.0
    gate.taken()
    await asyncio.wait_for(gate.wait(), patience(10))  # never stuck: an ack lost somewhere costs WAIT at most


def events_reaching_bolt(bot: RunningBot) -> list[dict[str, Any]]:
    """The inner events Bolt's middleware sees from now on, in order (what was dropped before Bolt never shows)."""
    seen: list[dict[str, Any]] = []

    async def record(body: dict[str, Any], next: Any) -> None:  # noqa: A002 - Bolt's argument name
        seen.append(body.get("event") or {})
        await next()

    bot.bot.app.use(record)
    return seen


async def test_our_own_messages_coming_back_are_acked_and_never_dispatched(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # Bolt's self-event middleware says "Skipped self event" for each one that reaches it (its level: set at start)
    caplog.set_level(logging.DEBUG, logger="slack_bolt.IgnoringSelfEvents")
    seen = events_reaching_bolt(slack_bot)
    anthropic_api.enqueue(text("Two people."))
    ts, _ = slack_api.mention("who is there?")
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["Two people."]
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    echoes = [e for e in slack_api.envelopes.values() if (e.payload.get("event") or {}).get("user") == slack_api.bot_user_id]
    assert echoes and all(e.acked_at is not None and e.retry_attempt == 0 for e in echoes)  # Slack sent them back
    assert [e for e in seen if e.get("user") == slack_api.bot_user_id] == []
    assert any(e.get("type") == "app_mention" for e in seen)  # people's events still are
    assert [r for r in caplog.records if "Skipped self event" in r.getMessage()] == []


@pytest.mark.parametrize("message_first", [False, True])
async def test_a_mentions_message_twin_is_acked_and_dispatched_once(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, message_first: bool
) -> None:
    """Slack sends an app_mention and a message event for one mention: the twin that comes second is acked and never
    reaches Bolt (the listener's dedupe would drop it after Bolt's work); the message event coming first is the one
    dispatched then. Either way one answer; a plain message in the same channel is still dispatched."""
    seen = events_reaching_bolt(slack_bot)
    anthropic_api.enqueue(text("Three cars."))
    ts, envelopes = slack_api.mention("how many cars?", message_first=message_first)
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["Three cars."]
    assert all(e.acked_at is not None and e.retry_attempt == 0 for e in envelopes)
    mine = [e for e in seen if e.get("ts") == ts]
    assert sorted(e.get("type") for e in mine) == (["app_mention", "message"] if message_first else ["app_mention"])
    other, env = slack_api.message("just chatting", channel="C0GENERAL")
    await slack_api.await_ack(env, timeout=patience(10))
    deadline = time.monotonic() + patience(10)
    while not any(e.get("ts") == other for e in seen) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert [e.get("type") for e in seen if e.get("ts") == other] == ["message"]


async def test_a_burst_is_dispatched_in_the_order_it_came_after_its_acks(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """Bolt's work on a burst waits for the burst's acks, then runs on every envelope held, in the order Slack sent
    them (a thread's messages are taken in the order people wrote them)."""
    events = events_reaching_bolt(slack_bot)
    said = [f"note {n} about the yard" for n in range(13)]
    envelopes = [slack_api.message(words, channel="C0GENERAL")[1] for words in said]
    for env in envelopes:
        await slack_api.await_ack(env, timeout=patience(10))
    deadline = time.monotonic() + patience(10)
    while len(events) < len(said) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert [str(e.get("text")) for e in events] == said
    assert all(e.retry_attempt == 0 and len(e.sent_at) == 1 for e in envelopes)
