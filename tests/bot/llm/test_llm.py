"""LLMClient through the real anthropic SDK against the Messages API emulator."""

from __future__ import annotations

import json
import time

import pytest

from bot.config import Settings, ThinkingConfig
from bot.llm.client import THINKING_BETA, LLMBudgetExceeded, LLMClient, LLMError, LLMTimeout, LLMUnavailable
from bot.llm.usage import cost_of, price_for
from tests.fakes.anthropic_api import FakeAnthropic, error, hang, stalled, text, tool_use, with_thinking
from tests.fixtures.common import free_port
from tests.fixtures.llm_clients import close_llm_clients, fast_client  # noqa: F401 - closes the clients

TOOLS = [
    {"name": "think", "description": "scratchpad", "input_schema": {"type": "object", "properties": {}}},
    {"name": "recall", "description": "search", "input_schema": {"type": "object", "properties": {}}},
]
SYSTEM = [{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}]
HELLO = [{"role": "user", "content": "hello"}]


def tuned(settings: Settings, **llm: object) -> Settings:
    return settings.model_copy(update={"llm": settings.llm.model_copy(update=llm)})


def client(settings: Settings, tmp_path=None, **kw) -> LLMClient:
    usage = tmp_path / "usage.json" if tmp_path is not None else None
    return fast_client(settings, usage, **kw)


async def test_cache_control_only_on_last_tool_and_caller_tools_untouched(anthropic_api, llm_settings):
    anthropic_api.enqueue(text("hi"))
    resp = await client(llm_settings).chat(HELLO, TOOLS, SYSTEM)
    assert resp.text == "hi" and resp.stop_reason == "end_turn"
    sent = anthropic_api.requests[0].body["tools"]
    assert [("cache_control" in t) for t in sent] == [False, True]
    assert sent[-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in t for t in TOOLS)
    assert anthropic_api.requests[0].body["system"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_second_identical_prefix_reads_the_cache(anthropic_api, llm_settings):
    anthropic_api.enqueue(text("one"), text("two"))
    llm = client(llm_settings)
    first = await llm.chat(HELLO, TOOLS, SYSTEM)
    second = await llm.chat(HELLO + [{"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}],
                            TOOLS, SYSTEM)
    assert first.usage["cache_creation_input_tokens"] > 0 and first.usage["cache_read_input_tokens"] == 0
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"]


async def test_529_then_success_is_retried(anthropic_api, llm_settings):
    anthropic_api.enqueue(error(529), text("recovered"))
    resp = await client(llm_settings).chat(HELLO, TOOLS, SYSTEM)
    assert resp.text == "recovered"
    assert [r.status for r in anthropic_api.requests] == [529, 200]


async def test_429_honours_retry_after(anthropic_api, llm_settings):
    anthropic_api.enqueue(error(429, retry_after="0.4"), text("ok"))
    t0 = time.monotonic()
    await client(llm_settings).chat(HELLO, TOOLS, SYSTEM)
    assert time.monotonic() - t0 >= 0.4  # base delay is 1 ms, so only retry-after explains the wait
    assert [r.status for r in anthropic_api.requests] == [429, 200]


async def test_retries_stop_at_max_retries_with_one_line_error(anthropic_api, llm_settings):
    anthropic_api.enqueue(*[error(500)] * 3)
    with pytest.raises(LLMError) as exc:
        await client(tuned(llm_settings, max_retries=2)).chat(HELLO, TOOLS, SYSTEM)
    assert len(anthropic_api.requests) == 3
    assert "500" in str(exc.value) and "\n" not in str(exc.value)


async def test_unreachable_api_is_retried_then_reported(llm_settings):
    settings = tuned(llm_settings, base_url=f"http://127.0.0.1:{free_port()}", max_retries=1)
    with pytest.raises(LLMError, match="cannot reach the Anthropic API"):
        await client(settings).chat(HELLO, TOOLS, SYSTEM)


async def test_missing_key_says_how_to_set_it(settings):
    with pytest.raises(LLMUnavailable, match="ANTHROPIC_API_KEY"):
        await client(settings).chat(HELLO, TOOLS, SYSTEM)
    assert client(settings).available is False


async def test_rejected_key_and_bad_request_are_one_line(anthropic_api, llm_settings):
    bad_key = tuned(llm_settings, api_key="sk-ant-wrong")
    with pytest.raises(LLMUnavailable, match="rejected the API key"):
        await client(bad_key).chat(HELLO, TOOLS, SYSTEM)
    with pytest.raises(LLMError, match="roles must alternate") as exc:
        await client(llm_settings).chat(HELLO + HELLO, TOOLS, SYSTEM)
    assert "\n" not in str(exc.value)
    assert [r.status for r in anthropic_api.requests] == [401, 400]  # neither is retried


async def test_daily_cost_cap_stops_calls_and_survives_restart(anthropic_api, llm_settings, tmp_path):
    settings = tuned(llm_settings, cost_limit_daily=0.000001)
    anthropic_api.enqueue(text("spent"))
    llm = client(settings, tmp_path)
    first = await llm.chat(HELLO, TOOLS, SYSTEM, session_key="cli:a")
    assert first.cost > 0
    with pytest.raises(LLMBudgetExceeded) as exc:
        await llm.chat(HELLO, TOOLS, SYSTEM)
    assert "raise llm.cost_limit_daily in config.yaml or wait until tomorrow" in str(exc.value)
    with pytest.raises(LLMBudgetExceeded):  # a restarted process reads today's spend back
        await client(settings, tmp_path).chat(HELLO, TOOLS, SYSTEM)
    assert len(anthropic_api.requests) == 1


async def test_usage_accumulates_per_session_and_day(anthropic_api, llm_settings, tmp_path):
    anthropic_api.enqueue(text("a"), text("b"), text("c"))
    llm = client(llm_settings, tmp_path)
    r = [await llm.chat(HELLO, TOOLS, SYSTEM, session_key=k) for k in ("s1", "s1", "s2")]
    s1 = llm.usage.session("s1")
    assert s1["calls"] == 2
    assert s1["input_tokens"] == r[0].usage["input_tokens"] + r[1].usage["input_tokens"]
    assert s1["cache_read_input_tokens"] == r[1].usage["cache_read_input_tokens"] > 0
    day = json.loads((tmp_path / "usage.json").read_text())
    (today,) = day.values()
    assert today["calls"] == 3
    assert today["cost"] == pytest.approx(sum(x.cost for x in r), rel=1e-4)


def test_price_table():
    assert price_for("claude-sonnet-4-5") == (3.0, 15.0)
    assert price_for("claude-opus-4-1-20250805") == (15.0, 75.0)
    assert price_for("claude-haiku-4-5") == (1.0, 5.0)
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000,
             "cache_creation_input_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000}
    assert cost_of(usage, "claude-sonnet-4-5") == pytest.approx(3 + 15 + 3.75 + 0.3)


async def test_thinking_sends_budget_and_interleaved_beta_and_returns_signed_blocks(anthropic_api, llm_settings):
    settings = tuned(llm_settings, thinking=ThinkingConfig(enabled=True, budget_tokens=2048))
    anthropic_api.enqueue(with_thinking("plan first", tool_use(("think", {"thought": "x"}))))
    resp = await client(settings).chat(HELLO, TOOLS, SYSTEM)
    req = anthropic_api.requests[0]
    assert req.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert req.body["max_tokens"] > 2048
    assert THINKING_BETA in req.headers["anthropic-beta"]
    assert resp.content_blocks[0]["type"] == "thinking" and resp.content_blocks[0]["signature"].startswith("sig_")
    assert resp.thinking == ["plan first"] and resp.tool_calls[0].name == "think"


async def test_sse_streaming_through_messages_stream(anthropic_api, llm_settings):
    settings = tuned(llm_settings, thinking=ThinkingConfig(enabled=True, budget_tokens=1024))
    reply = with_thinking("a long chain of thought", tool_use(("recall", {"query": "parking lot at night"}),
                                                                text="Let me look that up."))
    anthropic_api.enqueue(reply)
    resp = await client(settings, stream=True).chat(HELLO, TOOLS, SYSTEM)
    assert anthropic_api.requests[0].body["stream"] is True
    assert resp.stop_reason == "tool_use"
    assert resp.content_blocks == reply.content  # text/json/thinking/signature deltas reassembled exactly
    assert resp.tool_calls[0].input == {"query": "parking lot at night"}
    assert resp.usage["cache_creation_input_tokens"] > 0 and resp.usage["output_tokens"] > 1


def test_emulator_usable_from_sync_code():
    import anthropic

    with FakeAnthropic() as api:
        api.enqueue(text("sync ok"))
        msg = anthropic.Anthropic(api_key="sk-ant-test", base_url=api.url).messages.create(
            model="claude-sonnet-4-5", max_tokens=10, messages=HELLO)
    assert msg.content[0].text == "sync ok"


async def test_history_marker_on_last_user_block_lets_the_next_call_read_the_history(anthropic_api, llm_settings):
    anthropic_api.enqueue(tool_use(("think", {"thought": "x"})), text("done"))
    llm = client(llm_settings)
    history = [{"role": "user", "content": "describe the dock camera " * 40}]
    first = await llm.chat(history, TOOLS, SYSTEM)
    assert history == [{"role": "user", "content": "describe the dock camera " * 40}]  # caller's list untouched
    history += [{"role": "assistant", "content": first.content_blocks},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.tool_calls[0].id,
                                              "content": "ok"}]}]
    second = await llm.chat(history, TOOLS, SYSTEM)
    sent = anthropic_api.requests[1].body["messages"]
    assert sent[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in history[-1]["content"][-1]
    # the whole first request (tools, system and the first message) is read back from the cache
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"]


def test_client_survives_successive_event_loops(anthropic_api, llm_settings):
    import asyncio

    anthropic_api.enqueue(text("one"), text("two"))
    llm = LLMClient(llm_settings, retry_base_delay=0.001)
    answers = [asyncio.run(llm.chat(HELLO, TOOLS, SYSTEM)).text for _ in range(2)]  # like two CLI one-shots
    assert answers == ["one", "two"]


async def test_a_stream_that_stalls_mid_way_times_out_and_is_retried(anthropic_api, llm_settings):
    anthropic_api.enqueue(stalled(text("an answer that stops half-way " * 5), events=4), text("second try"))
    start = time.monotonic()
    resp = await client(tuned(llm_settings, request_timeout=1, max_retries=1)).chat(HELLO, TOOLS, SYSTEM)
    assert resp.text == "second try" and 1 <= time.monotonic() - start < 15
    assert anthropic_api.requests[0].body["stream"] is True  # it had started streaming, then went silent
    anthropic_api.enqueue(stalled(text("stops again " * 5), events=4))
    with pytest.raises(LLMTimeout, match=r"^Claude did not answer within 1 s; try again in a minute$"):
        await client(tuned(llm_settings, request_timeout=1, max_retries=0)).chat(HELLO, TOOLS, SYSTEM)


async def test_a_call_that_fails_gives_its_cost_hold_back(anthropic_api, llm_settings):
    # The cap is below one call's worst case: a hold that leaked would refuse every later call.
    llm = client(tuned(llm_settings, request_timeout=1, max_retries=0, cost_limit_daily=0.01))
    anthropic_api.enqueue(hang(), text("answered"))
    with pytest.raises(LLMTimeout):
        await llm.chat(HELLO, TOOLS, SYSTEM)
    assert (await llm.chat(HELLO, TOOLS, SYSTEM)).text == "answered"
