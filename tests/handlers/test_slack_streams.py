"""The emulator's streamed messages answer as Slack documents (docs.slack.dev chat.startStream/append/stop)."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import SlackEmulator


async def _error(client: AsyncWebClient, method: str, **body: object) -> str:
    with pytest.raises(SlackApiError) as exc:
        await client.api_call(method, json=body)
    return str(exc.value.response["error"])


async def test_a_stream_in_a_channel_needs_recipients_and_closes_for_good(slack_api: SlackEmulator) -> None:
    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    ts, _ = slack_api.mention("count the door")
    start = {"channel": "C0GENERAL", "thread_ts": ts}
    assert await _error(client, "chat.startStream", **start) == "missing_recipient_user_id"
    assert await _error(client, "chat.startStream", **start, recipient_user_id="U0HUMAN") == "missing_recipient_team_id"
    task = {"type": "task_update", "id": "t1", "title": "Counting crossings on door", "status": "in_progress"}
    resp = await client.api_call("chat.startStream", json={**start, "recipient_user_id": "U0HUMAN",
                                                          "recipient_team_id": slack_api.team_id, "chunks": [task]})
    msg = {"channel": "C0GENERAL", "ts": resp["ts"]}
    await client.api_call("chat.appendStream", json={**msg, "chunks": [{**task, "status": "complete"},
                                                                        {"type": "markdown_text", "text": "One in."}]})
    assert await _error(client, "chat.appendStream", **msg, markdown_text="x") == "streaming_mode_mismatch"
    assert await _error(client, "chat.appendStream", **msg, chunks=[{"type": "task_update"}]) == "invalid_chunks"
    await client.api_call("chat.stopStream", json=msg)
    assert await _error(client, "chat.appendStream", **msg, chunks=[task]) == "message_not_in_streaming_state"
    stored = slack_api.find_message("C0GENERAL", resp["ts"])
    assert stored["text"] == "One in." and stored["tasks"]["t1"]["status"] == "complete"
    assert stored["thread_ts"] == ts and not stored["streaming"]


async def test_a_dm_stream_needs_no_recipients_and_a_refusing_workspace_says_so(slack_api: SlackEmulator) -> None:
    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    ts, _ = slack_api.dm("hello", thread_ts=None)
    resp = await client.api_call("chat.startStream", json={"channel": "D0HUMAN", "thread_ts": ts,
                                                          "markdown_text": "Hi"})
    assert slack_api.find_message("D0HUMAN", resp["ts"])["text"] == "Hi"
    assert await _error(client, "chat.startStream", channel="D0HUMAN") == "invalid_arguments"  # thread_ts required
    slack_api.stream_error = "not_allowed"
    assert await _error(client, "chat.startStream", channel="D0HUMAN", thread_ts=ts) == "not_allowed"
