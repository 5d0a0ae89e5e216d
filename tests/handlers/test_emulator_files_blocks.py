"""The emulator holds the bot to Slack's rules for slack_file image blocks and chat.update (docs.slack.dev)."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import SlackEmulator
from tests.handlers.transport.test_files import jpeg


def image(fid: str) -> list[dict]:
    return [{"type": "image", "slack_file": {"id": fid}, "alt_text": "frame"}]


async def error_of(call) -> str:
    with pytest.raises(SlackApiError) as exc:
        await call
    return exc.value.response["error"]


async def test_image_block_needs_a_completed_image_upload_and_update_only_our_messages(slack_api: SlackEmulator) -> None:
    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    url = await client.files_getUploadURLExternal(filename="f.jpg", length=10)
    fid = url["file_id"]  # not uploaded, not completed: unusable
    assert await error_of(client.chat_postMessage(channel="C0GENERAL", text="x", blocks=image(fid))) == "invalid_blocks"
    assert await error_of(client.chat_postMessage(channel="C0GENERAL", text="x", blocks=image("F404"))) == "invalid_blocks"
    no_alt = [{"type": "image", "slack_file": {"id": fid}}]
    assert await error_of(client.chat_postMessage(channel="C0GENERAL", text="x", blocks=no_alt)) == "invalid_blocks"
    done = await client.files_upload_v2(file=jpeg(8, 8), filename="f.jpg")  # no channel: shared nowhere
    assert slack_api.messages("C0GENERAL") == []
    post = await client.chat_postMessage(channel="C0GENERAL", text="x", blocks=image(done["file"]["id"]))
    video = await client.files_upload_v2(file=b"\0\0\0\x18ftypmp42" + b"\0" * 32, filename="c.mp4")
    assert await error_of(client.chat_postMessage(channel="C0GENERAL", text="x",
                                                  blocks=image(video["file"]["id"]))) == "invalid_blocks"

    await client.chat_update(channel="C0GENERAL", ts=post["ts"], text="y")  # blocks absent: kept
    assert slack_api.find_message("C0GENERAL", post["ts"])["blocks"] == image(done["file"]["id"])
    assert await error_of(client.chat_update(channel="C0GENERAL", ts="1.000001", text="y")) == "message_not_found"
    human_ts, _ = slack_api.message("hello")
    assert await error_of(client.chat_update(channel="C0GENERAL", ts=human_ts, text="y")) == "cant_update_message"
