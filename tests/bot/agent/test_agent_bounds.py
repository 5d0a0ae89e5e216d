"""A thread survives what the model side can do to it: a hung API, an oversize message, a prompt the API calls too
long, and a cost cap under 20 simultaneous turns (real anthropic SDK against the Messages API emulator)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from bot.agent.compaction import SUMMARY_SYSTEM
from bot.agent.loop import Agent
from bot.agent.sessions import SessionStore
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.config import Settings, load_settings
from bot.events import AgentEvent, EventType
from bot.llm.usage import cost_of
from bot.services import Services
from tests.fakes.anthropic_api import FakeAnthropic, Reply, error, hang, text, tool_use
from tests.fakes.anthropic_checks import prompt_tokens
from tests.fixtures.llm_clients import close_llm_clients, fast_client  # noqa: F401 - closes the clients
from tools import build_registry
from workspace import Workspace
from workspace.memory import MemoryStore

E = EventType
def make_agent(settings: Settings, workspace: Path | None = None, registry=None, **llm: object) -> Agent:
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update=llm),
                                           "workspace": workspace or settings.workspace})
    ws = Workspace(settings.workspace)
    ws.init()
    client = fast_client(settings, ws.state_dir / "usage.json")
    return Agent(llm=client, tools=registry or build_registry(), sessions=SessionStore(ws.sessions_dir), settings=settings,
                 workspace=ws, services=Services(memory=MemoryStore(ws.root, use_embeddings=False)))


async def turn(agent: Agent, text_: str, key: str = "slack:T1:C1:1.1") -> list[AgentEvent]:
    # The streamed text pieces are checked in test_agent_stream.py; here, the turn's steps.
    return [ev async for ev in agent.process_message(key, text_) if ev.type is not E.TEXT_DELTA]


def roles_alternate(agent: Agent, key: str = "slack:T1:C1:1.1") -> bool:
    roles = [m["role"] for m in agent.sessions.history(key)]
    return roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:], strict=False))


async def test_hung_api_gives_a_clear_line_within_60s_and_the_next_message_works(anthropic_api, llm_env):
    settings = load_settings({**llm_env, "VISION_AGENT_LLM_TIMEOUT": "5"})
    agent = make_agent(settings, max_retries=1)
    anthropic_api.enqueue(hang(), hang(), text("Back online."))
    start = time.monotonic()
    events = await turn(agent, "is the dock camera up?")
    took = time.monotonic() - start
    assert [e.type for e in events] == [E.ERROR] and took < 60
    assert events[0].data["text"] == "Claude did not answer within 5 s (2 attempts); try again in a minute"
    assert len(anthropic_api.requests) == 2 and took >= 2 * 5  # each attempt waited its 5 s, then gave up
    events = await turn(agent, "and now?")  # the session lock is free and the history is consistent
    assert [e.type for e in events] == [E.RESPONSE] and events[0].data["text"] == "Back online."
    assert roles_alternate(agent)


async def test_the_turn_bound_covers_every_retry(anthropic_api, llm_settings):
    agent = make_agent(llm_settings, request_timeout=5, turn_timeout=2, max_retries=4)
    anthropic_api.enqueue(hang(), text("Back online."))
    start = time.monotonic()
    events = await turn(agent, "hello")
    assert time.monotonic() - start < 15 and len(anthropic_api.requests) == 1  # retries alone: 4 x 5 s
    assert [e.data["text"] for e in events] == ["Claude did not answer within 2 s; try again in a minute"]
    assert [e.type for e in await turn(agent, "hello again")] == [E.RESPONSE]


async def test_oversize_message_is_cut_with_a_note_and_the_thread_keeps_working(anthropic_api, llm_settings):
    agent = make_agent(llm_settings)
    anthropic_api.handler = lambda body: text("Read it.")
    paste = "START " + "lorem ipsum dolor sit amet " * 11_111 + " END"
    assert len(paste) >= 300_000
    events = await turn(agent, paste)
    assert [e.type for e in events] == [E.RESPONSE]
    note, reply = events[0].data["text"].split("\n\n")
    assert note.startswith(f"_Your message was {len(paste):,} characters") and reply == "Read it."
    sent = anthropic_api.requests[0].body
    said = sent["messages"][0]["content"][-1]["text"]
    assert said.startswith("START ") and said.endswith(" END") and "characters cut here" in said
    assert prompt_tokens(sent) < 0.5 * 200_000  # the API's own count: far under the window
    stored = json.dumps(agent.sessions.full_transcript("slack:T1:C1:1.1"))
    assert len(stored) < len(paste) / 2  # cut before it reached the history, on disk too
    for follow_up in ("and the ending?", "thanks"):
        assert [e.type for e in await turn(agent, follow_up)] == [E.RESPONSE]
    assert all(r.status == 200 for r in anthropic_api.requests)


class NoArgs(ToolArgs):
    pass


async def test_oversize_tool_result_is_cut_before_the_history(anthropic_api, llm_settings):
    registry = build_registry()

    async def dump(args: NoArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult("FIRST " + "frame 12: 3 people, 1 forklift; " * 20_000 + "LAST")

    registry.register("dump_log", "Returns the whole detection log.", NoArgs, dump)
    agent = make_agent(llm_settings, registry=registry)
    anthropic_api.enqueue(tool_use(("dump_log", {})), text("Mostly people."))
    events = await turn(agent, "what did the camera see?")
    assert events[-1].data["text"] == "Mostly people."
    result = anthropic_api.requests[1].body["messages"][-1]["content"][0]["content"][0]["text"]
    assert result.startswith("FIRST ") and result.endswith("LAST") and "characters cut here" in result
    assert len(result) < 200_000 and prompt_tokens(anthropic_api.requests[1].body) < 0.5 * 200_000


def summaries_or(answer: str, summary: Reply | None = None):
    def reply(body: dict) -> Reply:
        if body.get("system") and body["system"][0]["text"] == SUMMARY_SYSTEM:
            return summary or text("- the user pasted long logs")
        return text(answer)
    return reply


async def test_a_prompt_the_api_calls_too_long_is_compacted_and_retried_once_then_one_line(base_env):
    # The API's window is smaller than the configured one (say, after a model switch): only its 400 says so. Sized
    # so one 24,000-character log fits beside the system prompt and the tools (about 7,500 tokens) and two do not.
    with FakeAnthropic(max_prompt_tokens=15_000) as api:
        agent = make_agent(load_settings({**base_env, "ANTHROPIC_BASE_URL": api.url,
                                          "ANTHROPIC_API_KEY": api.api_key}))
        api.handler = summaries_or("Noted.")
        log = "ERROR disk full on cam7 " * 1000  # 24,000 characters: under the message budget
        assert [e.type for e in await turn(agent, "first log: " + log)] == [E.RESPONSE]
        events = await turn(agent, "second log: " + log)
        assert [e.type for e in events] == [E.THINKING, E.RESPONSE]  # too long -> compacted -> retried
        assert [r.status for r in api.requests[1:]] == [400, 200, 200]
        events = await turn(agent, "third log: " + log * 2)  # alone with the system prompt it cannot fit
        assert [e.type for e in events] == [E.THINKING, E.ERROR]
        assert [r.status for r in api.requests[4:]] == [400, 200, 400]  # one retry after compacting, no loop
        line = events[-1].data["text"]
        assert "no longer fits Claude's context window" in line and "\n" not in line
        events = await turn(agent, "what was in the logs?")  # the next turn works again
        assert [e.type for e in events] == [E.THINKING, E.RESPONSE] and events[-1].data["text"] == "Noted."
        assert [r.status for r in api.requests[7:]] == [200, 200]  # it summarised the failed turn first
        assert prompt_tokens(api.requests[-1].body) < 15_000
        assert roles_alternate(agent)


async def test_twenty_simultaneous_turns_spend_at_most_the_cap_plus_one_call(anthropic_api, llm_settings, tmp_path):
    anthropic_api.handler = lambda body: text("The dock is clear, two forklifts parked. " * 12, delay=0.5)
    probe = make_agent(llm_settings, tmp_path / "probe")
    await turn(probe, "question 0", key="cli:probe")
    one = probe.llm.usage.today()["cost"]
    anthropic_api.cache.clear()  # the run starts cold, as the probe did
    # Later calls read the cached prefix and cost less: about a dozen fit. Below one call's worst case (its
    # max_tokens output) whatever the size of the tool definitions, so a call must wait for holds to settle.
    cap = min(3 * one, 0.9 * probe.llm.usage.worst_case(0, llm_settings.llm.max_tokens))
    agent = make_agent(llm_settings, tmp_path / "run", cost_limit_daily=cap)
    finals = await asyncio.gather(*(turn(agent, f"question {i}", key=f"cli:{i}") for i in range(20)))
    spent = agent.llm.usage.today()["cost"]
    calls = [cost_of(r.usage, agent.llm.model) for r in anthropic_api.ok_requests[1:]]
    assert spent == pytest.approx(sum(calls)) and spent <= cap + max(calls)
    kinds = [events[-1].type for events in finals]
    refused = [events[-1].data["text"] for events in finals if events[-1].type is E.ERROR]
    # One call's worst case (its max_tokens output) is above the cap: more than one answer means calls waited
    # for holds to settle instead of being refused; the refused ones came once the spend itself reached the cap.
    assert kinds.count(E.RESPONSE) >= 2 and len(refused) == 20 - kinds.count(E.RESPONSE) > 0
    assert agent.llm.usage.worst_case(0, agent.settings.llm.max_tokens) > cap
    assert all(line.startswith(f"daily LLM budget of ${cap:.2f} reached") for line in refused)
    under = agent.llm.usage.today()["cost"] < cap
    later = await turn(agent, "one more", key="cli:later")  # settled holds are given back: spend decides again
    assert later[-1].type is (E.RESPONSE if under else E.ERROR)


async def test_when_the_summary_fails_too_the_old_turns_are_dropped_with_a_note(base_env):
    with FakeAnthropic(max_prompt_tokens=17_000) as api:  # two turns overflow, one fits (with the tool definitions)
        agent = make_agent(load_settings({**base_env, "ANTHROPIC_BASE_URL": api.url,
                                          "ANTHROPIC_API_KEY": api.api_key}), max_retries=0)
        api.handler = summaries_or("Noted.", summary=error(500))
        log = "ERROR disk full on cam7 " * 1000
        for n in ("first", "second"):
            events = await turn(agent, f"{n} log: {log}")
        assert events[-1].type is E.RESPONSE and [r.status for r in api.requests[1:]] == [400, 500, 200]
        sent = api.requests[-1].body["messages"][0]["content"][0]["text"]
        assert "could not be summarised" in sent and sent.endswith("Assistant: Noted.")  # its last lines
