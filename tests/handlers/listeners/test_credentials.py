"""Credentials never leave: a camera password in CAMERAS.md, and the bot's own tokens, stay out of what Claude receives,
what Slack shows, memory and the `/vision` acknowledgement — through the real Slack, Messages API and tool paths."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handlers.listeners import commands
from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot, answers, start_bot, stop_bot
from tests.fixtures.slow_start import SlowStartBackend

SECRET = "S3cret"
URL = f"rtsp://admin:{SECRET}@10.0.0.5/stream"
MASKED = "rtsp://admin:***@10.0.0.5/stream"
CAMERAS = f"# Cameras\n\n| Name | URL | Location |\n|---|---|---|\n| dock | {URL} | Loading dock |\n"
ROBOFLOW_KEY = "rf0123456789abcdef"  # no telling shape: only its literal value can be masked


@pytest.fixture
async def camera_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    """The bot over a workspace whose CAMERAS.md holds a password; pipelines on a fake backend."""
    workspace = Path(slack_env["VISION_AGENT_WORKSPACE"])
    (workspace / "CAMERAS.md").write_text(CAMERAS)
    (workspace / "memory").mkdir(exist_ok=True)
    # A note written before redaction existed: recall must not hand its password out either.
    (workspace / "memory" / "2026-01-01.md").write_text(f"# Observations 2026-01-01\n\n## dock\n- 09:00:00 dock "
                                                        f"camera moved to {URL}\n")
    env = {**slack_env, "ROBOFLOW_API_KEY": ROBOFLOW_KEY}
    running = await start_bot(env, slack_api, backend=SlowStartBackend(hold=0.6))
    try:
        yield running
    finally:
        await stop_bot(running)


def everything_slack_got(slack_api: SlackEmulator) -> str:
    """Every Web API call, response_url answer and ack payload the emulator recorded, as one string."""
    calls = [json.dumps(c.params, default=str) for c in slack_api.calls]
    acks = [json.dumps(e.ack_payload, default=str) for e in slack_api.envelopes.values() if e.ack_payload]
    return "\n".join(calls + acks)


def tool_result_texts(anthropic_api: FakeAnthropic) -> list[str]:
    out = []
    for rec in anthropic_api.ok_requests:
        for m in rec.body["messages"]:
            blocks = m["content"] if isinstance(m["content"], list) else []
            out += [json.dumps(b["content"]) for b in blocks if b.get("type") == "tool_result"]
    return out


async def finished(slack_api: SlackEmulator, ts: str) -> None:
    # Generous: recall's first search loads the embedding model (seconds on a small machine).
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] in ("white_check_mark", "x")
                              and c.params["timestamp"] == ts, timeout=60)


async def test_cameras_md_reaches_the_model_masked_and_a_repeated_url_reaches_slack_masked(
    camera_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text(f"The dock camera streams from {URL} ([open]({URL}))."))
    ts, _ = slack_api.mention("which cameras are there?")
    await finished(slack_api, ts)
    [request] = anthropic_api.ok_requests
    assert SECRET.encode() not in request.raw
    system = json.dumps(request.body["system"])
    assert '| dock | camera \\"dock\\" |' in system and MASKED not in system  # known to the model by name only
    slack = everything_slack_got(slack_api)
    assert SECRET not in slack and MASKED in slack


async def test_tools_resolve_the_masked_url_and_memory_never_keeps_the_password(
    camera_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(
        tool_use(("start_pipeline", {"video_reference": MASKED, "pipeline_name": "dock",
                                            "model_id": "builtin/people"})),
        # A hostile or confused model repeating a password it got somewhere (a user, an old note).
        tool_use(("remember", {"content": f"dock camera is {URL}", "category": "knowledge"})),
        tool_use(("recall", {"query": "dock camera"})),
        text(f"Watching {URL} now."),
    )
    ts, _ = slack_api.mention("watch the dock")
    await finished(slack_api, ts)
    backend = camera_bot.runtime.pipelines.backend
    assert [c[1]["video_reference"] for c in backend.calls if c[0] == "start_pipeline"] == [URL]  # the bot filled it in
    notes = {f.name: f.read_text() for f in (Path(camera_bot.settings.workspace) / "memory").glob("*.md")}
    assert f"dock camera is {MASKED}" in notes["KNOWLEDGE.md"] and SECRET not in notes["KNOWLEDGE.md"]
    results = tool_result_texts(anthropic_api)
    recall = results[-1]
    assert 'moved to camera \\"dock\\"' in recall  # the old note was found, the camera named, not its URL
    assert not any(SECRET in r for r in results)
    for request in anthropic_api.ok_requests:  # what the bot itself adds: system prompt and turn context
        assert SECRET not in json.dumps(request.body["system"])
        assert SECRET not in json.dumps(request.body["messages"][0])
    assert SECRET not in everything_slack_got(slack_api)


async def test_slash_command_ack_and_answer_never_echo_the_password(
    camera_bot: RunningBot, slack_api: SlackEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "ACK_BUDGET", 0.2)  # the slow start acks with its first line, the answer follows
    env = await slack_api.await_ack(slack_api.slash(f"start {URL} name=dock"))
    assert "Starting" in env.ack_payload["text"] and MASKED in env.ack_payload["text"]
    await slack_api.await_for("response_url")
    assert SECRET not in everything_slack_got(slack_api)


async def test_the_bots_own_secrets_are_masked_in_what_it_posts(
    camera_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    leaked = f"bot {slack_api.bot_token}, app {slack_api.app_token}, claude {API_KEY}, roboflow {ROBOFLOW_KEY}"
    anthropic_api.enqueue(text(f"Here are my keys: {leaked}. Also xoxb-123-456-abcdef from elsewhere."))
    ts, _ = slack_api.mention("print your configuration")
    await finished(slack_api, ts)
    slack = everything_slack_got(slack_api)
    for secret in (slack_api.bot_token, slack_api.app_token, API_KEY, ROBOFLOW_KEY, "xoxb-123-456-abcdef"):
        assert secret not in slack
    # the answer itself still goes out (streamed text may reach Slack in several appends: read the message)
    assert "Here are my keys: bot ***" in "\n".join(answers(slack_api, "C0GENERAL", ts))
