"""Opening the agent's Messages tab offers prompts that fit the workspace's cameras, within a second."""

from __future__ import annotations

import time

from handlers.listeners.home import MAX_PROMPTS, suggested_prompts
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot


async def test_messages_tab_opened_gets_suggested_prompts_within_a_second(
    slack_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    cams = [c.name for c in slack_bot.runtime.workspace.cameras()]
    sent = time.time()
    slack_api.open_messages_tab()
    call = (await slack_api.await_for("assistant.threads.setSuggestedPrompts"))[0]
    assert call.time - sent < 1.0 and call.params["channel_id"] == "D0HUMAN"
    titles = [p["title"] for p in slack_api.suggested_prompts["D0HUMAN"]]
    assert "What happened while I was away?" in titles and len(titles) <= MAX_PROMPTS
    if cams:
        assert f"Count people at {cams[0]}" in titles


def test_prompts_name_the_cameras_and_fit_slacks_limit() -> None:
    prompts = suggested_prompts(["cam3", "door", "gate", "yard"])
    assert [p["title"] for p in prompts] == ["What happened while I was away?", "Count people at cam3",
                                             "Show me door", "Show me gate"]
    assert [p["title"] for p in suggested_prompts([])][1] == "Count people in a photo"


async def test_emulator_refuses_prompts_for_an_app_without_the_agent_feature(slack_api: SlackEmulator) -> None:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    slack_api.agent_app = False
    try:
        await client.api_call("assistant.threads.setSuggestedPrompts",
                              json={"channel_id": "D0HUMAN", "prompts": suggested_prompts([])})
        raise AssertionError("accepted")
    except SlackApiError as exc:
        assert exc.response["error"] == "not_agent_app"
    slack_api.agent_app = True
    await client.api_call("assistant.threads.setSuggestedPrompts",  # thread_ts is optional, as Slack documents
                          json={"channel_id": "D0HUMAN", "prompts": suggested_prompts(["cam1"])})
    assert slack_api.suggested_prompts["D0HUMAN"][1]["title"] == "Count people at cam1"
    try:
        await client.assistant_threads_setTitle(channel_id="D0HUMAN", thread_ts="1.000001", title="x")
        raise AssertionError("accepted")
    except SlackApiError as exc:
        assert exc.response["error"] == "invalid_thread_ts"


async def test_a_dm_thread_is_titled_after_its_first_answer(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api
) -> None:
    from tests.fakes.anthropic_api import text

    anthropic_api.enqueue(text("Hi."), text("Nothing moved at the door."), text("Still nothing."))
    root, _ = slack_api.dm("hello")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    slack_api.dm("What happened at the door overnight?", thread_ts=root)
    call = (await slack_api.await_for("assistant.threads.setTitle"))[0]
    assert call.params["thread_ts"] == root and call.params["title"] == "What happened at the door overnight?"
    slack_api.dm("and now?", thread_ts=root)
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", count=3)
    assert len(slack_api.calls_to("assistant.threads.setTitle")) == 1  # only after the first answer
