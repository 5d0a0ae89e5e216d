"""Watches through the Slack emulator: asked in a thread, answered there once on real footage (the asker mentioned)
and then gone; one that runs out says so; they survive a restart; only the allowed may cancel one."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.bot.monitor_helpers import run_to_end
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.media import register_cameras
from tests.fixtures.slack import answers, await_answers, start_bot, stop_bot

FOOTAGE = Path(__file__).resolve().parents[2] / "fixtures" / "data"
BOSS = "U0BOSS"


def _street(workspace: Path) -> Path:
    """crossing.mp4 (three men cross a street, 5 fps) as the camera `street` of CAMERAS.md."""
    clip = Path(shutil.copy(FOOTAGE / "crossing.mp4", workspace / "street.mp4"))
    register_cameras(workspace, street=str(clip))
    return clip


async def _slash(slack_api: SlackEmulator, line: str, user: str = HUMAN) -> str:
    env = await slack_api.await_ack(slack_api.slash(line, user=user))
    return str(env.ack_payload["text"])


@pytest.mark.slow
async def test_a_confirmed_watch_asked_in_a_thread_answers_there_once_on_real_footage_and_is_gone(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api)  # the real in-process inference backend
    try:
        _street(running.settings.workspace)
        anthropic_api.enqueue(
            tool_use(("watch_for", {"camera": "street", "condition": "appears person", "for_minutes": 60,
                                    "about": "someone walking on the street", "confirm": True})),
            text("I'll tell you here when someone shows up on street."),
            text("YES, a man walks along the street."),  # the model's look at the frame before it tells
        )
        ts, _ = slack_api.mention("tell me when someone walks on street in the next hour")
        await await_answers(slack_api, "C0GENERAL", ts)
        [watch] = running.runtime.watches.all()
        assert (watch.user_id, watch.channel, watch.thread_ts) == (HUMAN, "C0GENERAL", ts)
        assert watch.id in await _slash(slack_api, "watches")
        started = slack_api.slash("start street")
        await slack_api.await_ack(started)
        said = await await_answers(slack_api, "C0GENERAL", ts, count=2, timeout=120)
        assert re.search(rf"\*street\*: <@{HUMAN}> person appeared \(\d+ (person|people) in view\) \(the model "
                         rf"agreed on the frame\)\. Watch `{watch.id}` \(person appears\) is done\.", said[1]), said
        look = anthropic_api.ok_requests[-1].body["messages"][0]["content"]
        # the asker's own words reach the model as quoted data, never as instructions (bot/objects/text.py)
        assert look[0]["type"] == "image" and '<data kind="request">\nsomeone walking on the street\n</data>' in look[1]["text"]
        await run_to_end(running.runtime.pipelines, "street", timeout=120)
        await running.runtime.watches.flush()
        assert len(answers(slack_api, "C0GENERAL", ts)) == 2  # once: the men keep walking, nothing more is said
        assert "No watches run" in await _slash(slack_api, "watches")
    finally:
        await stop_bot(running)


async def test_a_watch_that_runs_out_says_so_to_its_asker_where_it_was_asked(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    running = await start_bot(slack_env, slack_api)
    try:
        _street(running.settings.workspace)
        reply = await _slash(slack_api, "watch street count person>3 for 5s")
        assert "Watching *street* for 5 s" in reply and "No pipeline runs on street now" in reply
        posted = await slack_api.await_for("chat.postMessage", timeout=30)
        [watch_id] = re.findall(r"unwatch (w[0-9a-f]{6})", reply)
        line = answers(slack_api, "C0GENERAL")[-1]
        assert line == (f":hourglass: *street*: <@{HUMAN}> Watch `{watch_id}` on street ended: more than 3 people "
                        "are in view did not happen within 5 s.")
        assert not any(b.get("type") == "actions" for b in posted[0].params.get("blocks") or [])  # no buttons
        assert "No watches run" in await _slash(slack_api, "watches")
    finally:
        await stop_bot(running)


async def test_a_watch_asked_where_the_bot_is_not_a_member_answers_in_the_askers_dm(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    slack_api.add_channel("C0LOBBY", "lobby", bot_member=False)  # a slash command works there; a post does not
    running = await start_bot(slack_env, slack_api)
    try:
        _street(running.settings.workspace)
        reply = await _slash_in(slack_api, "watch street count person>3 for 5s", "C0LOBBY")
        [watch_id] = re.findall(r"unwatch (w[0-9a-f]{6})", reply)
        await slack_api.await_for("chat.postMessage", lambda c: c.params.get("channel") == "D0HUMAN", count=2,
                                  timeout=30)
        why, answer = answers(slack_api, "D0HUMAN")[-2:]
        assert why.startswith("I could not post in <#C0LOBBY> (not_in_channel): `/invite @Vision Agent` there")
        assert f"Watch `{watch_id}` on street ended" in answer
        assert not slack_api.messages("C0LOBBY")
    finally:
        await stop_bot(running)


async def _slash_in(slack_api: SlackEmulator, line: str, channel: str) -> str:
    env = await slack_api.await_ack(slack_api.slash(line, channel=channel))
    return str(env.ack_payload["text"])


async def test_watches_survive_a_restart_and_only_the_allowed_may_cancel_one(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    guarded = {"allowed_users": [BOSS]}
    running = await start_bot(slack_env, slack_api, slack=guarded)
    try:
        _street(running.settings.workspace)
        reply = await _slash(slack_api, "watch street absent person 60 for 2h confirm", user=BOSS)
        [watch_id] = re.findall(r"unwatch (w[0-9a-f]{6})", reply)
    finally:
        await stop_bot(running)
    running = await start_bot(slack_env, slack_api, slack=guarded)  # the same workspace, a new process's state
    try:
        listed = await _slash(slack_api, "watches", user=HUMAN)
        assert f"`{watch_id}` on *street*: no person is in view for 60 s (asked by <@{BOSS}>)" in listed
        assert "confirmed by the model" in listed
        refused = await _slash(slack_api, f"unwatch {watch_id}", user=HUMAN)
        assert refused == f"Only <@{BOSS}> may change pipelines, rules and schedules; ask one of them."
        assert watch_id in await _slash(slack_api, "watches", user=HUMAN)
        assert f"Stopped watch `{watch_id}`" in await _slash(slack_api, f"unwatch {watch_id}", user=BOSS)
        assert running.runtime.watches.all() == []
    finally:
        await stop_bot(running)
