"""Rights follow the person: a user outside slack.allowed_users asking in chat cannot get tools to change anything."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.pipelines.request import StartRequest
from bot.rights import OPERATOR
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend

BOSS = "U0BOSS"
REFUSAL = f"Only <@{BOSS}> may change pipelines, rules and schedules; ask one of them."


@pytest.fixture
async def guarded_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    """The bot with only BOSS allowed to control, a FakeBackend, and a running 'lobby' pipeline."""
    async for running in _guarded(slack_env, slack_api):
        yield running


@pytest.fixture
async def opted_in_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    """guarded_bot whose operator lets heartbeat and cron turns pause pipelines (heartbeat.unattended_tools)."""
    async for running in _guarded(slack_env, slack_api, heartbeat={"unattended_tools": ["pause_pipeline"]}):
        yield running


async def _guarded(slack_env: dict[str, str], slack_api: SlackEmulator, **overrides: Any) -> AsyncIterator[RunningBot]:
    # BOSS may control, and is an operator: may stop the lobby pipeline the operator started
    running = await start_bot(slack_env, slack_api, backend=FakeBackend(),
                              slack={"allowed_users": [BOSS], "operators": [BOSS]}, **overrides)
    video = Path(running.settings.workspace) / "lobby.mp4"
    video.write_bytes(b"x")
    await running.runtime.pipelines.start(StartRequest(str(video), "lobby", model_id="builtin/people"))
    try:
        yield running
    finally:
        await stop_bot(running)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last user message of one Messages API request."""
    last = body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    return " ".join(c["text"] for c in block["content"] if c.get("type") == "text")


async def ask(slack_api: SlackEmulator, anthropic_api: FakeAnthropic, user: str, call: tuple[str, dict]) -> dict:
    """`user` mentions the bot; the scripted model makes `call`, then answers; returns the tool_result block."""
    anthropic_api.enqueue(tool_use(call), text("Done what I could."))
    slack_api.mention("please do it", user=user)
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] in ("white_check_mark", "warning"))
    [block] = tool_results(anthropic_api.ok_requests[-1].body)
    return block


STRANGER_CALLS = [
    ("stop_pipeline", {"pipeline_id": "lobby"}, REFUSAL),
    ("pause_pipeline", {"pipeline_id": "lobby"}, REFUSAL),
    ("resume_pipeline", {"pipeline_id": "lobby"}, REFUSAL),
    ("start_pipeline", {"video_reference": "0", "pipeline_name": "webcam"}, REFUSAL),
    ("remember", {"content": "ignore every alert from the lobby", "category": "preference"},
     f"Only <@{BOSS}> may change the bot's memory; ask one of them."),
    ("export_script", {"name": "door-count"}, f"Only <@{BOSS}> may change recipes; ask one of them."),
]


@pytest.mark.parametrize(("name", "args", "refusal"), STRANGER_CALLS, ids=[c[0] for c in STRANGER_CALLS])
async def test_stranger_asking_in_chat_changes_nothing_and_the_model_is_told_who_may(
    guarded_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, name: str, args: dict,
    refusal: str,
) -> None:
    backend = guarded_bot.runtime.pipelines.backend
    block = await ask(slack_api, anthropic_api, HUMAN, (name, args))
    assert block.get("is_error") is True and result_text(block) == refusal
    assert guarded_bot.runtime.pipelines.resolve("lobby").status == "running"
    assert [c[0] for c in backend.calls] == ["start_pipeline"]  # only the fixture's own start reached the backend
    notes = " ".join(f.read_text() for f in (Path(guarded_bot.settings.workspace) / "memory").glob("*.md"))
    assert "ignore every alert" not in notes


async def test_chat_refusal_is_the_same_line_as_the_command_refusal(
    guarded_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    block = await ask(slack_api, anthropic_api, HUMAN, ("stop_pipeline", {"pipeline_id": "lobby"}))
    command = await slack_api.await_ack(slack_api.slash("stop lobby", user=HUMAN))
    assert result_text(block) == command.ack_payload["text"] == REFUSAL


async def test_allowed_user_asking_in_chat_stops_the_pipeline(
    guarded_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    block = await ask(slack_api, anthropic_api, BOSS, ("stop_pipeline", {"pipeline_id": "lobby"}))
    assert not block.get("is_error") and "lobby" in result_text(block)
    assert guarded_bot.runtime.pipelines.resolve("lobby").status == "stopped"


async def test_allowed_user_outside_the_allowed_channels_is_refused(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, backend=FakeBackend(),
                              slack={"allowed_users": [BOSS], "allowed_channels": ["C0ALERTS"]})
    try:
        block = await ask(slack_api, anthropic_api, BOSS, ("start_pipeline", {"video_reference": "0",
                                                                              "pipeline_name": "webcam"}))
        assert block.get("is_error") and result_text(block) == (
            "Pipelines, rules and schedules can only be changed from <#C0ALERTS>.")
        assert running.runtime.pipelines.snapshot() == []
    finally:
        await stop_bot(running)


async def test_heartbeat_acts_as_the_operator_and_may_pause_once_opted_in(
    opted_in_bot: RunningBot, anthropic_api: FakeAnthropic
) -> None:
    # The allowlists admit only BOSS; the heartbeat is the operator, and the operator opted pause_pipeline in.
    anthropic_api.enqueue(tool_use(("pause_pipeline", {"pipeline_id": "lobby"})), text("HEARTBEAT_OK"))
    events = [ev async for ev in opted_in_bot.runtime.agent.process_heartbeat("lobby is noisy; pause it")]
    assert [e.data.get("is_error") for e in events if e.type.name == "TOOL_RESULT"] == [False]
    assert opted_in_bot.runtime.pipelines.resolve("lobby").status == "paused"


async def test_heartbeat_without_the_opt_in_may_not_pause(
    guarded_bot: RunningBot, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(tool_use(("pause_pipeline", {"pipeline_id": "lobby"})), text("HEARTBEAT_OK"))
    events = [ev async for ev in guarded_bot.runtime.agent.process_heartbeat("lobby is noisy; pause it")]
    assert [e.data.get("is_error") for e in events if e.type.name == "TOOL_RESULT"] == [True]
    assert guarded_bot.runtime.pipelines.resolve("lobby").status == "running"


async def test_operator_turn_may_remember_while_an_unknown_asker_may_not(
    guarded_bot: RunningBot, anthropic_api: FakeAnthropic
) -> None:
    agent = guarded_bot.runtime.agent
    call = ("remember", {"content": "the lobby opens at 7", "category": "knowledge"})
    anthropic_api.enqueue(tool_use(call), text("ok"), tool_use(call), text("ok"))
    unknown = [ev async for ev in agent.process_message("cli:anon", "remember this")]  # no requester given
    operator = [ev async for ev in agent.process_message("cli:ops", "remember this", [], OPERATOR)]
    assert [e.data["is_error"] for e in unknown if e.type.name == "TOOL_RESULT"] == [True]
    assert [e.data["is_error"] for e in operator if e.type.name == "TOOL_RESULT"] == [False]
    knowledge = Path(guarded_bot.settings.workspace) / "memory" / "KNOWLEDGE.md"
    assert knowledge.read_text().count("the lobby opens at 7") == 1
