"""The model's yes/no look at a frame (a watch's `confirm`), against the Messages API emulator."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from bot.llm.client import LLMClient
from bot.llm.look import FrameLook
from tests.fakes.anthropic_api import FakeAnthropic, error, text


async def test_the_look_reads_yes_or_no_and_says_none_when_it_cannot_tell(
    anthropic_api: FakeAnthropic, llm_settings: Settings, astronaut_jpeg: bytes, tmp_path: Path
) -> None:
    llm = LLMClient(llm_settings, tmp_path / "usage.json", retry_base_delay=0.001)
    look = FrameLook(llm)
    try:
        anthropic_api.enqueue(text("YES - a person stands in the frame."), text("No."), text("Maybe, it is dark."),
                              error(400, message="bad request"))
        said = [await look(astronaut_jpeg, "Does this frame show that person appears?") for _ in range(4)]
        assert said == [True, False, None, None]
        assert await look(b"not an image", "Does this frame show anything?") is None  # never sent
        body = anthropic_api.ok_requests[0].body
        image, question = body["messages"][0]["content"]
        assert image["type"] == "image" and image["source"]["media_type"] == "image/jpeg"
        assert question["text"].startswith("Does this frame show that person appears?")
        assert len(anthropic_api.requests) == 4
    finally:
        await llm.aclose()


async def test_without_a_key_the_look_is_not_made(settings: Settings, astronaut_jpeg: bytes, tmp_path: Path) -> None:
    llm = LLMClient(settings, tmp_path / "usage.json")
    try:
        assert await FrameLook(llm)(astronaut_jpeg, "Is anyone there?") is None
    finally:
        await llm.aclose()
