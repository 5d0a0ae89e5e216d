"""A streamed Claude call skips the SDK's typed walk of its body (issue 34: `maybe_transform`, 10-60 ms of the event
loop per call with a long history and 50 tools, stacked 50 deep when 50 threads ask at once). The walk is a no-op on
the bodies the bot builds, and these tests hold both halves: the SDK leaves them as they are, and the API gets them
as built."""

from __future__ import annotations

import json

import pytest
from anthropic._utils import maybe_transform
from anthropic.types import message_create_params

from bot.config import ThinkingConfig
from bot.llm.client import THINKING_BETA
from tests.bot.llm.test_llm import SYSTEM, TOOLS, client, tuned
from tests.fakes.anthropic_api import text
from tests.fixtures.llm_clients import close_llm_clients  # noqa: F401 - closes the clients

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "how many people?"}, IMAGE]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "count them", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_1", "name": "recall", "input": {"query": "lobby", "n": 3}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                                  "content": [{"type": "text", "text": "3 people"}, IMAGE]}]},
]


def test_the_sdks_typed_walk_leaves_our_bodies_as_they_are(llm_settings) -> None:
    """Every kind of body the bot sends (text, images, tool calls and results, thinking, cache markers, no tools):
    a newer SDK that renames or reformats something in its walk fails here, and then open_stream must walk too."""
    llm = client(llm_settings)
    for thinking, tools in ((True, TOOLS), (False, []), (None, TOOLS[:1])):
        req = llm.build_request(HISTORY, tools, SYSTEM, max_tokens=2048, thinking=thinking)
        body = {key: value for key, value in req.items() if key != "extra_headers"} | {"stream": True}
        assert maybe_transform(body, message_create_params.MessageCreateParams) == body


@pytest.mark.parametrize("thinking", [False, True])
async def test_a_streamed_call_sends_its_body_as_built_without_the_walk(anthropic_api, llm_settings, monkeypatch,
                                                                        thinking: bool) -> None:
    import anthropic.resources.messages.messages as sdk_messages

    walked: list[object] = []
    real = sdk_messages.maybe_transform
    monkeypatch.setattr(sdk_messages, "maybe_transform", lambda *a, **k: walked.append(a) or real(*a, **k))
    settings = tuned(llm_settings, thinking=ThinkingConfig(enabled=thinking, budget_tokens=1024))
    llm = client(settings)
    anthropic_api.enqueue(text("three people"))
    resp = await llm.chat(HISTORY, TOOLS, SYSTEM)
    assert resp.text == "three people"
    assert walked == []  # the SDK's walk did not run for this call
    sent = anthropic_api.requests[-1]
    built = llm.build_request(HISTORY, TOOLS, SYSTEM, thinking=thinking)
    expected = {key: value for key, value in built.items() if key != "extra_headers"} | {"stream": True}
    assert json.loads(json.dumps(sent.body)) == json.loads(json.dumps(expected))
    assert sent.headers["x-stainless-stream-helper"] == "messages"
    assert (THINKING_BETA in sent.headers.get("anthropic-beta", "")) is thinking
