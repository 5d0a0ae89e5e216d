"""An alert message that learns: False alarm clicks are recorded and tighten the rule; the summary updates it in place."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from bot.monitoring.rules import Rule
from handlers.alerts.sink import FALSE_ALARM_ACTION, MUTE_ACTION, STOP_ACTION
from tests.bot.monitor_helpers import FakePipelines, result
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.handlers.transport.test_files import jpeg

STRANGER = "U0STRANGER"


@pytest.fixture
async def street_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    from tests.tools.fake_backend import FakeBackend

    running = await start_bot({**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}, slack_api,
                              backend=FakeBackend(), clips={"enabled": False},
                              slack={"allowed_users": [HUMAN], "operators": [HUMAN]})  # the rule is the operator's
    # re-armed at once and no cooldown: every frame with more than one face is a fresh event
    running.runtime.monitor.add_rule(Rule("count_over", "street", class_name="face", threshold=1,
                                          cooldown_seconds=0, clear_seconds=0))
    try:
        yield running
    finally:
        await stop_bot(running)


def is_alert(call: ApiCall) -> bool:
    return call.params.get("channel") == "C0ALERTS" and "blocks" in call.params


async def frames(running: RunningBot, *faces: int) -> None:
    """Results of the street pipeline reach the monitor, as from its pipeline thread."""
    handle = FakePipelines().add("street")
    for n in faces:
        running.runtime.monitor.on_result(handle, result(faces=n, frame=jpeg(32, 24)))
    await running.runtime.monitor.flush()


async def mark(slack_api: SlackEmulator, post: ApiCall, ts: str, user: str = HUMAN) -> str:
    """Click False alarm on the alert; the ephemeral line the clicker got."""
    actions = next(b for b in post.params["blocks"] if b["type"] == "actions")
    value = next(e["value"] for e in actions["elements"] if e["action_id"] == FALSE_ALARM_ACTION)
    env = slack_api.click(FALSE_ALARM_ACTION, value, "C0ALERTS", ts, user=user)
    rid = env.payload["response_url"].rsplit("/", 1)[-1]
    return (await slack_api.await_for("response_url", lambda c: c.params["rid"] == rid))[0].params["text"]


async def test_false_alarms_are_recorded_noted_and_the_next_identical_event_stays_quiet(
    street_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    runtime = street_bot.runtime
    await frames(street_bot, 2, 0, 2)  # two events: 2 faces, gone, 2 faces again
    posts = await slack_api.await_for("chat.postMessage", is_alert, count=2)
    first, second = (m["ts"] for m in slack_api.messages("C0ALERTS"))
    assert "2 faces in view, over 1" in posts[0].params["text"]

    said = await mark(slack_api, posts[0], first)
    assert said.startswith("Noted") and "1 more within 24 h" in said
    said = await mark(slack_api, posts[1], second)
    assert said == ("Noted. After 2 false alarms, street `count_over:face&gt;2` now alerts only above 2 faces; "
                    "`/vision rules street` shows it.")
    again = await mark(slack_api, posts[1], second)  # a second click on the same alert counts once
    assert "already marked" in again

    rows = runtime.router.storage.table("false_alarms").all()
    assert [(r["camera"], r["rule"], r["user"], r["counts"]) for r in rows] == [
        ("street", "count_over:face>1", HUMAN, {"face": 2})] * 2
    assert all("2 faces in view" in r["text"] and r["time"] >= r["alert_time"] for r in rows)
    knowledge = (runtime.memory.dir / "KNOWLEDGE.md").read_text()
    assert "street: count_over:face>1 alert around" in knowledge and "false alarm (marked by @U0HUMAN)" in knowledge
    assert [r.id for r in runtime.monitor.effective_rules("street")] == ["count_over:face>2"]

    await frames(street_bot, 0, 2)  # the same event as before: no longer an alert
    await asyncio.sleep(0.3)
    assert len(slack_api.calls_to("chat.postMessage", is_alert)) == 2
    await frames(street_bot, 3)  # the rule is tightened, not off
    third = (await slack_api.await_for("chat.postMessage", is_alert, count=3))[2]
    assert "3 faces in view, over 2" in third.params["text"]


async def test_false_alarm_from_someone_not_allowed_is_refused_and_changes_nothing(
    street_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    await frames(street_bot, 2)
    [post] = await slack_api.await_for("chat.postMessage", is_alert)
    ts = slack_api.messages("C0ALERTS")[0]["ts"]
    for _ in range(2):
        said = await mark(slack_api, post, ts, user=STRANGER)
        assert said == "Only <@U0HUMAN> may change pipelines, rules and schedules; ask one of them."
    assert street_bot.runtime.router.storage.table("false_alarms").all() == []
    assert [r.id for r in street_bot.runtime.monitor.effective_rules("street")] == ["count_over:face>1"]


async def test_tier2_summary_updates_the_alert_message_in_place(
    street_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    await frames(street_bot, 2)
    [post] = await slack_api.await_for("chat.postMessage", is_alert)
    ts = slack_api.messages("C0ALERTS")[0]["ts"]
    anthropic_api.enqueue(text("Two people at the street door: a delivery.\nThey left after a minute."))
    assert await street_bot.runtime.scheduler.heartbeat.run() == "alert"

    [update] = await slack_api.await_for("chat.update")
    assert (update.params["channel"], update.params["ts"]) == ("C0ALERTS", ts)
    blocks = update.params["blocks"]
    assert [b for b in blocks if b["type"] == "image"] == [b for b in post.params["blocks"] if b["type"] == "image"]
    actions = next(b for b in blocks if b["type"] == "actions")
    assert {e["action_id"] for e in actions["elements"]} == {STOP_ACTION, MUTE_ACTION, FALSE_ALARM_ACTION}
    said = json.dumps(blocks)
    assert said.count("a delivery") == 1 and said.count("2 faces in view, over 1") == 1
    await asyncio.sleep(0.2)
    [message] = slack_api.messages("C0ALERTS")  # still one message, edited; nothing posted again
    assert message["edited"] and "a delivery" in json.dumps(message["blocks"])
    assert len(slack_api.calls_to("chat.postMessage", is_alert)) == 1


async def test_a_scheduled_summary_with_a_target_goes_into_that_thread(
    street_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    from bot.commands.schedule import parse_target
    from bot.scheduling.cron_jobs import daily_summary

    root, _ = slack_api.message("daily reports go here", channel="C0OTHER")
    link = f"<https://emulated.slack.com/archives/C0OTHER/p{root.replace('.', '')}>"
    assert parse_target(link) == ("C0OTHER", root) and parse_target("<#C0OTHER|random>") == ("C0OTHER", None)
    runtime = street_bot.runtime
    runtime.memory.store("2 faces seen", "observation", camera_id="street")
    assert await daily_summary(None, runtime.memory, runtime.router, target=parse_target(link))
    [post] = await slack_api.await_for("chat.postMessage", lambda c: c.params.get("channel") == "C0OTHER")
    assert post.params["thread_ts"] == root and "Daily summary" in post.params["text"]
    assert not slack_api.calls_to("chat.postMessage", is_alert)  # not in the alert channel


async def test_a_members_false_alarm_is_noted_but_the_rule_is_its_owners_to_change(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    from tests.tools.fake_backend import FakeBackend

    running = await start_bot({**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}, slack_api,
                              backend=FakeBackend(), clips={"enabled": False})
    running.runtime.monitor.add_rule(Rule("count_over", "street", class_name="face", threshold=1,
                                          cooldown_seconds=0, clear_seconds=0))
    try:
        await frames(running, 2, 0, 2)
        posts = await slack_api.await_for("chat.postMessage", is_alert, count=2)
        first, second = (m["ts"] for m in slack_api.messages("C0ALERTS"))
        for post, ts in ((posts[0], first), (posts[1], second)):
            said = await mark(slack_api, post, ts)
            assert said.startswith("Noted") and "belongs to the operator" in said
        [rule] = running.runtime.monitor.rules("street")
        assert rule.threshold == 1  # two members' marks changed nothing of the operator's rule
    finally:
        await stop_bot(running)
