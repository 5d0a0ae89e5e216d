"""The Slack emulator itself behaves like Slack where the bot could get it wrong (so passing tests mean something)."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import SlackEmulator


@pytest.fixture
def client(slack_api: SlackEmulator) -> AsyncWebClient:
    return AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)


async def test_tokens_are_checked_like_slack(slack_api: SlackEmulator) -> None:
    with pytest.raises(SlackApiError, match="invalid_auth"):
        await AsyncWebClient(token="xoxb-nope", base_url=slack_api.api_url).auth_test()
    with pytest.raises(SlackApiError, match="not_allowed_token_type"):
        await AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url).apps_connections_open(
            app_token=slack_api.bot_token)


async def test_limits_and_unknown_ids_are_errors(slack_api: SlackEmulator, client: AsyncWebClient) -> None:
    too_long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    for kwargs, error in [
        ({"channel": "C0GENERAL", "text": "x", "blocks": too_long}, "invalid_blocks"),
        ({"channel": "C0GENERAL", "text": "x" * 40_001}, "msg_too_long"),
        ({"channel": "C0NOPE", "text": "x"}, "channel_not_found"),
        ({"channel": "C0GENERAL", "text": "x", "thread_ts": "1.000001"}, "message_not_found"),
    ]:
        with pytest.raises(SlackApiError, match=error):
            await client.chat_postMessage(**kwargs)


async def test_private_file_needs_the_bot_token(slack_api: SlackEmulator) -> None:
    file = slack_api.add_file("a.jpg", b"\xff\xd8\xffdata")
    async with aiohttp.ClientSession() as http:
        async with http.get(file["url_private"]) as resp:
            assert resp.content_type == "text/html"  # Slack's sign-in page, status 200
        async with http.get(file["url_private"], headers={"Authorization": f"Bearer {slack_api.bot_token}"}) as resp:
            assert await resp.read() == b"\xff\xd8\xffdata"


async def test_unacked_envelope_is_resent_with_retry_attempt(slack_api: SlackEmulator, client: AsyncWebClient) -> None:
    slack_api.ack_timeout = 0.2
    url = (await client.apps_connections_open(app_token=slack_api.app_token))["url"]
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
        assert json.loads((await ws.receive()).data)["type"] == "hello"
        _, env = slack_api.message("hello")
        first = json.loads((await ws.receive(timeout=2)).data)
        again = json.loads((await ws.receive(timeout=2)).data)
        assert first["envelope_id"] == again["envelope_id"] == env.envelope_id
        assert (first["retry_attempt"], again["retry_attempt"], again["retry_reason"]) == (0, 1, "timeout")
        await ws.send_str(json.dumps({"envelope_id": env.envelope_id}))
        with pytest.raises(asyncio.TimeoutError):
            await ws.receive(timeout=0.5)
    assert env.acked_at is not None


async def test_rate_limit_answers_429_with_retry_after_like_slack(slack_api: SlackEmulator) -> None:
    slack_api.rate_limit("chat.postMessage", calls=1, retry_after=3)
    async with aiohttp.ClientSession() as http:
        form = {"channel": "C0GENERAL", "text": "hi"}
        headers = {"Authorization": f"Bearer {slack_api.bot_token}"}
        async with http.post(slack_api.api_url + "chat.postMessage", data=form, headers=headers) as resp:
            assert (resp.status, resp.headers["Retry-After"]) == (429, "3")
            assert await resp.json() == {"ok": False, "error": "ratelimited"}
        async with http.post(slack_api.api_url + "chat.postMessage", data=form, headers=headers) as resp:
            assert resp.status == 200 and (await resp.json())["ok"] is True  # the one limited call is used up
    assert [m["text"] for m in slack_api.messages("C0GENERAL")] == ["hi"]  # the limited call changed nothing
    slack_api.rate_limit(seconds=0.3)  # every method, for a while
    with pytest.raises(SlackApiError, match="ratelimited"):
        await AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url, retry_handlers=[]).auth_test()
    await asyncio.sleep(0.35)
    assert (await AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url).auth_test())["ok"]
