"""The agent loop through the real anthropic SDK against the Messages API emulator (which validates every request)."""

from __future__ import annotations

import asyncio
import base64
import io
import json

import pytest
from PIL import Image
from pydantic import Field

from bot.agent.loop import Agent, is_heartbeat_ok
from bot.agent.sessions import SUMMARY_PREFIX, SessionStore
from bot.agent.tools import Attachment, ToolArgs, ToolContext, ToolResult
from bot.config import Settings, ThinkingConfig
from bot.events import AgentEvent, EventType
from bot.services import Services
from tests.fakes.anthropic_api import Reply, text, tool_use, with_thinking
from tests.fixtures.llm_clients import close_llm_clients, fast_client  # noqa: F401 - closes the clients
from tools import build_registry
from workspace import Workspace
from workspace.memory import MemoryStore

E = EventType


def tuned(settings: Settings, **llm: object) -> Settings:
    return settings.model_copy(update={"llm": settings.llm.model_copy(update=llm)})


@pytest.fixture
def ws(llm_settings: Settings) -> Workspace:
    w = Workspace(llm_settings.workspace)
    w.init()
    return w


def make_agent(settings: Settings, ws: Workspace, registry=None) -> Agent:
    llm = fast_client(settings, ws.state_dir / "usage.json")
    return Agent(llm=llm, tools=registry or build_registry(), sessions=SessionStore(ws.sessions_dir),
                 settings=settings, workspace=ws, services=Services(memory=MemoryStore(ws.root, use_embeddings=False)))


async def collect(gen) -> list[AgentEvent]:
    return [ev async for ev in gen]


def kinds(events: list[AgentEvent]) -> list[str]:
    # The streamed text pieces are checked in test_agent_stream.py; here, the turn's steps.
    return [e.type.value for e in events if e.type is not EventType.TEXT_DELTA]


def jpeg(w: int, h: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (w, h), (200, 30, 30)).save(out, format="JPEG")
    return out.getvalue()


class NoArgs(ToolArgs):
    pass


class ShotArgs(ToolArgs):
    camera: str = Field(description="camera")


async def test_think_remember_answer_turn_writes_memory(anthropic_api, llm_settings, ws):
    anthropic_api.enqueue(
        tool_use(("think", {"thought": "The user states a fact about the dock; store it."})),
        tool_use(("remember", {"content": "Forklift 7 parks at dock 2 every night", "category": "knowledge"})),
        text("Noted: forklift 7 parks at dock 2 at night."),
    )
    events = await collect(make_agent(llm_settings, ws).process_message("cli:a", "Forklift 7 parks at dock 2."))
    assert kinds(events) == ["tool_call", "tool_result", "tool_call", "tool_result", "response"]
    assert events[2].data["name"] == "remember" and not events[3].data["is_error"]
    assert "Forklift 7 parks at dock 2" in (ws.memory_dir / "KNOWLEDGE.md").read_text()
    last = anthropic_api.requests[2].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[-1]["content"][0]["content"][0]["text"].startswith("Saved to KNOWLEDGE.md")
    assert events[-1].data["text"].startswith("Noted")


async def test_tool_that_raises_is_reported_as_is_error_and_loop_continues(anthropic_api, llm_settings, ws):
    reg = build_registry()

    async def explode(args: NoArgs, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("camera on fire")

    reg.register("explode", "Always fails.", NoArgs, explode)
    anthropic_api.enqueue(tool_use(("explode", {})), text("The tool failed; the camera reported a fault."))
    events = await collect(make_agent(llm_settings, ws, reg).process_message("cli:a", "go"))
    result = next(e for e in events if e.type is E.TOOL_RESULT)
    assert result.data["is_error"] and "camera on fire" in result.data["text"]
    sent = anthropic_api.requests[1].body["messages"][-1]["content"][0]
    assert sent["is_error"] is True and "camera on fire" in sent["content"][0]["text"]
    assert events[-1].type is E.RESPONSE


async def test_unknown_tool_and_invalid_arguments_are_is_error(anthropic_api, llm_settings, ws):
    anthropic_api.enqueue(tool_use(("no_such_tool", {}), ("remember", {"content": "", "bogus": 1})), text("ok"))
    events = await collect(make_agent(llm_settings, ws).process_message("cli:a", "go"))
    results = [e.data for e in events if e.type is E.TOOL_RESULT]
    assert [r["is_error"] for r in results] == [True, True]
    assert "Unknown tool 'no_such_tool'" in results[0]["text"]
    # a member's object (a memory note): refused in the words every door uses (bot/objects/refusal.py)
    assert results[1]["text"] == "content cannot be empty; unknown option 'bogus'; it takes content, category, camera."
    blocks = anthropic_api.requests[1].body["messages"][-1]["content"]
    assert [b.get("is_error") for b in blocks] == [True, True]


async def test_second_turn_resends_the_first(anthropic_api, llm_settings, ws):
    anthropic_api.enqueue(text("Hello Ana."), text("Your name is Ana."))
    agent = make_agent(llm_settings, ws)
    await collect(agent.process_message("cli:a", "My name is Ana."))
    await collect(agent.process_message("cli:a", "What is my name?"))
    msgs = anthropic_api.requests[1].body["messages"]
    assert msgs[0]["content"][-1]["text"] == "My name is Ana."
    assert msgs[1]["content"][0]["text"] == "Hello Ana."
    assert msgs[2]["content"][-1]["text"] == "What is my name?"


async def test_killed_process_resumes_the_session_from_jsonl(anthropic_api, llm_settings, ws):
    anthropic_api.enqueue(tool_use(("think", {"thought": "x"})), text("Watching dock."), text("Still dock."))
    await collect(make_agent(llm_settings, ws).process_message("slack:T1:C1:17.1", "Watch the dock"))
    # A crash after a tool_use was recorded but before its result: the transcript ends mid-tool.
    crashed = SessionStore(ws.sessions_dir)
    crashed.append("slack:T1:C1:17.1", {"role": "user", "content": "and count people"})
    crashed.append("slack:T1:C1:17.1", {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_dead", "name": "think", "input": {"thought": "y"}}]})
    events = await collect(make_agent(llm_settings, ws).process_message("slack:T1:C1:17.1", "which camera?"))
    assert events[-1].type is E.RESPONSE  # the emulator accepted the repaired history
    msgs = anthropic_api.requests[-1].body["messages"]
    assert msgs[0]["content"][-1]["text"] == "Watch the dock"
    assert [m["role"] for m in msgs] == ["user", "assistant"] * 4 + ["user"]
    repaired = msgs[-3]["content"]
    assert repaired[0]["tool_use_id"] == "toolu_dead" and repaired[0]["is_error"]
    assert msgs[-2]["content"][0]["text"].startswith("(no reply")  # the broken turn is closed, not merged into
    assert msgs[-1]["content"][-1]["text"] == "which camera?"


async def test_cache_markers_and_byte_identical_prefix_between_turns(anthropic_api, llm_settings, ws):
    anthropic_api.enqueue(text("one"), text("two"))
    agent = make_agent(llm_settings, ws)
    await collect(agent.process_message("cli:a", "first"))
    await collect(agent.process_message("cli:a", "second"))
    prefixes = []
    for req in anthropic_api.requests:
        tools, system = req.body["tools"], req.body["system"]
        assert [i for i, t in enumerate(tools) if "cache_control" in t] == [len(tools) - 1]
        marked = [i for i, b in enumerate(system) if "cache_control" in b]
        assert marked == [len(system) - 1]  # the whole system prompt is stable
        turn = req.body["messages"][-1]["content"]
        # the dynamic tail moved into the turn's user message, just before the user's text
        assert turn[-2]["text"].startswith("<turn_context>\nCurrent time: ") and "## Active pipelines" in turn[-2]["text"]
        assert not any("Current time" in b["text"] for b in system)
        prefixes.append(json.dumps([tools, system[: marked[0] + 1]]))
    assert prefixes[0] == prefixes[1]
    first, second = anthropic_api.requests
    unmarked = [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
                for m in first.body["messages"]]
    assert second.body["messages"][:1] == unmarked
    assert sum("cache_control" in b for m in second.body["messages"] for b in m["content"]) == 1
    assert second.usage["cache_read_input_tokens"] >= len(prefixes[0]) // 8
    # all the first request cached, its user message included, is read back: turn 1 is a cached prefix of turn 2
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"] > 0


async def test_turn_context_carries_time_pipelines_and_matched_skill_into_the_history(anthropic_api, llm_settings, ws):
    from datetime import UTC, datetime

    times = iter([datetime(2026, 2, 11, 10, n, tzinfo=UTC) for n in (0, 9, 15)])
    llm = fast_client(llm_settings, ws.state_dir / "usage.json")
    agent = Agent(llm=llm, tools=build_registry(), sessions=SessionStore(ws.sessions_dir), settings=llm_settings,
                  workspace=ws, pipelines_text=lambda: "pipe_3 'lot' running 2 fps", clock=lambda: next(times))
    anthropic_api.enqueue(text("Hi."), text("Two cars."))
    await collect(agent.process_message("cli:a", "hello"))
    await collect(agent.process_message("cli:a", "How many parked cars are in the lot?"))
    first, second = anthropic_api.requests
    assert first.body["system"] == second.body["system"]
    msgs = second.body["messages"]
    old_ctx, new_ctx = msgs[0]["content"][0]["text"], msgs[2]["content"][0]["text"]
    assert "2026-02-11 10:00" in old_ctx and "Skill loaded" not in old_ctx  # earlier turns keep their own context
    assert "2026-02-11 10:09" in new_ctx and "pipe_3 'lot'" in new_ctx
    assert "Skill loaded for this request: parking-lot" in new_ctx and "# Parking Lot" in new_ctx
    assert msgs[2]["content"][-1]["text"] == "How many parked cars are in the lot?"
    stored = SessionStore(ws.sessions_dir).history("cli:a")  # a restart sees the same turn contexts
    assert stored[2]["content"][0]["text"] == new_ctx and len(stored) == 4
    anthropic_api.enqueue(text("Still two."))
    await collect(agent.process_message("cli:a", "And parked cars now?"))
    third = anthropic_api.requests[-1].body["messages"]
    assert third[:4] == [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
                         for m in msgs] + [third[3]]  # the history is a prefix: nothing before this turn changed
    ctx = third[4]["content"][0]["text"]
    assert "10:15" in ctx and "Skill parking-lot applies to this request too" in ctx and "# Parking Lot" not in ctx


async def test_a_skill_pointed_to_is_loaded_again_when_compaction_summarised_it_away(anthropic_api, llm_settings, ws):
    agent = make_agent(tuned(llm_settings, context_window=1000), ws)
    anthropic_api.enqueue(text("Two cars."), text("- user watches parked cars in the lot"), text("Three cars."))
    await collect(agent.process_message("cli:a", "How many parked cars are in the lot?"))
    events = await collect(agent.process_message("cli:a", "And parked cars now?"))
    assert kinds(events) == ["thinking", "response"]
    assert "Skill loaded for this request: parking-lot" in anthropic_api.requests[1].body["messages"][0]["content"]
    final = anthropic_api.requests[2].body["messages"]
    assert len(final) == 1 and final[0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    texts = [b["text"] for b in final[0]["content"]]
    assert "Skill parking-lot applies to this request too" in texts[1] and texts[2] == "And parked cars now?"
    assert "Skill loaded for this request: parking-lot" in texts[3] and "# Parking Lot" in texts[3]


async def test_daily_cost_cap_ends_the_turn_with_one_error_line(anthropic_api, llm_settings, ws):
    events = await collect(make_agent(tuned(llm_settings, cost_limit_daily=0.0), ws).process_message("cli:a", "hi"))
    assert kinds(events) == ["error"]
    assert "daily LLM budget of $0.00 reached" in events[0].data["text"]
    assert anthropic_api.requests == []


async def test_sessions_run_concurrently_while_one_session_serializes(anthropic_api, llm_settings, ws):
    anthropic_api.handler = lambda body: text("re: " + body["messages"][-1]["content"][-1]["text"], delay=0.3)
    agent = make_agent(llm_settings, ws)
    task = asyncio.ensure_future(asyncio.gather(collect(agent.process_message("cli:a", "a1")),
                                                collect(agent.process_message("cli:b", "b1"))))
    while len(anthropic_api.requests) < 1:
        await asyncio.sleep(0.01)
    assert agent.busy("cli:") and not agent.busy("slack:")
    await task
    r1, r2 = anthropic_api.requests
    assert r2.received < r1.answered and r1.received < r2.answered  # both sessions were in flight together
    await asyncio.gather(collect(agent.process_message("cli:a", "a2")), collect(agent.process_message("cli:a", "a3")))
    r3, r4 = anthropic_api.requests[2:]
    assert r4.received >= r3.answered  # one after the other
    assert [m["content"][-1]["text"] for m in r4.body["messages"]] == ["a1", "re: a1", "a2", "re: a2", "a3"]
    await agent.wait_idle("cli:")
    assert not agent.busy("")


async def test_thinking_blocks_are_kept_and_sent_back(anthropic_api, llm_settings, ws):
    settings = tuned(llm_settings, thinking=ThinkingConfig(enabled=True, budget_tokens=1024))
    anthropic_api.enqueue(with_thinking("Plan: think first.", tool_use(("think", {"thought": "ok"}), text="Checking."))
                          , with_thinking("Done.", text("All clear.")))
    events = await collect(make_agent(settings, ws).process_message("cli:a", "status?"))
    assert [e.data["text"] for e in events if e.type is E.THINKING] == ["Plan: think first.", "Checking.", "Done."]
    sent = anthropic_api.requests[1].body["messages"][1]["content"]
    assert sent[0]["type"] == "thinking" and sent[0]["signature"].startswith("sig_")
    assert anthropic_api.requests[1].body["thinking"]["type"] == "enabled"


@pytest.mark.parametrize("reply,ok", [
    ("HEARTBEAT_OK", True), ("HEARTBEAT_OK.", True), ("**HEARTBEAT_OK**", True), ("`HEARTBEAT_OK`", True),
    ("  heartbeat_ok \n", True), ("HEARTBEAT_OK - all 3 pipelines running.", True),
    ("Checked everything. HEARTBEAT_OK", True), ("Camera dock dropped at 10:02.", False),
    ("HEARTBEAT_OK " + "but " * 100, False), ("", False),
])
def test_is_heartbeat_ok(reply, ok):
    assert is_heartbeat_ok(reply) is ok


async def test_heartbeat_ok_is_silent_and_alerts_are_responses(anthropic_api, llm_settings, ws):
    anthropic_api.enqueue(text("**HEARTBEAT_OK**"), text("Camera dock stopped sending frames at 10:02."))
    agent = make_agent(llm_settings, ws)
    quiet = await collect(agent.process_heartbeat("Pipelines: dock running.", frames=[jpeg(1280, 720)]))
    loud = await collect(agent.process_heartbeat("Pipelines: dock error."))
    assert quiet == []
    assert kinds(loud) == ["response"] and "dock stopped" in loud[0].data["text"]
    first = anthropic_api.requests[0].body
    assert "exactly HEARTBEAT_OK" in first["system"][0]["text"]
    image = first["messages"][0]["content"][0]
    context = first["messages"][0]["content"][1]["text"]
    assert context.startswith("<turn_context>\nCurrent time: ") and "Skill loaded" not in context
    assert first["messages"][0]["content"][-1]["text"] == "Pipelines: dock running."
    assert max(Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size) == 640
    assert agent.sessions.history("heartbeat")[-1]["content"][0]["text"].startswith("Camera dock")


async def test_heartbeat_session_keeps_only_recent_checks(anthropic_api, llm_settings, ws):
    anthropic_api.handler = lambda body: text("HEARTBEAT_OK")
    agent = make_agent(llm_settings, ws)
    for n in range(6):
        await collect(agent.process_heartbeat(f"check {n}"))
    msgs = anthropic_api.requests[-1].body["messages"]
    assert msgs[0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    assert sum(m["role"] == "user" for m in msgs) == 3 and msgs[-1]["content"][-1]["text"] == "check 5"


async def test_context_guard_summarises_into_memory_and_keeps_tool_pairs(anthropic_api, llm_settings, ws):
    settings = tuned(llm_settings, context_window=1000)
    # The bulk is in the reply: a message above a quarter of the window would be cut before it reached the history.
    anthropic_api.enqueue(tool_use(("think", {"thought": "a" * 400})), text("First answer. " + "Details. " * 200),
                          text("- user watches the dock; forklift question answered"), text("Second answer."))
    agent = make_agent(settings, ws)
    await collect(agent.process_message("cli:a", "Watch the dock " + "please " * 50))
    events = await collect(agent.process_message("cli:a", "And now?"))
    assert kinds(events) == ["thinking", "response"]
    summary_req = anthropic_api.requests[2].body
    assert "tools" not in summary_req and "Watch the dock" in summary_req["messages"][0]["content"]
    assert "cache_control" not in json.dumps(summary_req["messages"])  # a one-off request is not cached
    final = anthropic_api.requests[3].body["messages"]
    assert final[0]["content"][0]["text"] == f"{SUMMARY_PREFIX}\n- user watches the dock; forklift question answered"
    assert final[0]["content"][-1]["text"] == "And now?" and len(final) == 1
    assert "user watches the dock" in (ws.memory_dir / "KNOWLEDGE.md").read_text()
    assert len(SessionStore(ws.sessions_dir).full_transcript("cli:a")) == 6  # nothing lost on disk


async def test_attachments_become_image_blocks_and_a_note_tools_can_use(anthropic_api, llm_settings, ws, tmp_path):
    photo = tmp_path / "dock.jpg"
    photo.write_bytes(jpeg(3000, 1500))
    anthropic_api.enqueue(text("A red image."))
    await collect(make_agent(llm_settings, ws).process_message(
        "cli:a", "what is this?", [Attachment(photo, file_id="F0123ABCD")]))
    content = anthropic_api.requests[0].body["messages"][0]["content"]
    size = Image.open(io.BytesIO(base64.b64decode(content[0]["source"]["data"]))).size
    assert size == (1568, 784)
    assert str(photo) in content[-1]["text"] and "F0123ABCD" in content[-1]["text"]
    assert content[1]["text"].startswith("<turn_context>")  # between the images and the user's text


class ImageRefArgs(ToolArgs):
    image: str = Field(description="image")


async def test_a_file_shared_in_an_earlier_turn_is_usable_by_file_id_after_a_restart(
    anthropic_api, llm_settings, ws, tmp_path
):
    from bot.media.resolve import resolve_image

    reg = build_registry()

    async def measure(args: ImageRefArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(text=f"{len(resolve_image(args.image, ctx))} bytes")

    reg.register("measure", "Size of an image.", ImageRefArgs, measure)
    photo = tmp_path / "dock.jpg"
    photo.write_bytes(jpeg(64, 48))
    anthropic_api.enqueue(text("Got it."))
    await collect(make_agent(llm_settings, ws, reg).process_message(
        "slack:T:C:1", "here is the dock", [Attachment(photo, file_id="F0DOCK123")]))
    # a new process: the second turn carries no attachment, the model refers to the file by its Slack id
    anthropic_api.enqueue(tool_use(("measure", {"image": "F0DOCK123"})), text("Done."))
    events = await collect(make_agent(llm_settings, ws, reg).process_message("slack:T:C:1", "how big was it?"))
    result = next(e for e in events if e.type is E.TOOL_RESULT)
    assert not result.data["is_error"] and result.data["text"] == f"{len(photo.read_bytes())} bytes"
    # another session never sees it
    anthropic_api.enqueue(tool_use(("measure", {"image": "F0DOCK123"})), text("Cannot."))
    events = await collect(make_agent(llm_settings, ws, reg).process_message("slack:T:C:2", "and here?"))
    other = next(e for e in events if e.type is E.TOOL_RESULT)
    assert other.data["is_error"] and "not shared in this conversation" in other.data["text"]


async def test_tool_frames_are_saved_and_images_go_back_resized(anthropic_api, llm_settings, ws):
    reg = build_registry()

    async def snapshot(args: ShotArgs, ctx: ToolContext) -> ToolResult:
        frame = jpeg(1920, 1080)
        return ToolResult(text=f"1 person on {args.camera}", image=frame, frame=frame, frame_caption="dock, 1 person")

    reg.register("snapshot", "Take a snapshot.", ShotArgs, snapshot)
    anthropic_api.enqueue(tool_use(("snapshot", {"camera": "dock"})), text("One person at the dock."))
    events = await collect(make_agent(llm_settings, ws, reg).process_message("cli:a", "look at the dock"))
    frame = next(e for e in events if e.type is E.FRAME)
    assert frame.data["caption"] == "dock, 1 person"
    assert open(frame.data["path"], "rb").read() == frame.data["image"]
    assert str(ws.frames_dir) in frame.data["path"]
    block = anthropic_api.requests[1].body["messages"][-1]["content"][0]
    assert block["content"][0]["text"] == "1 person on dock"
    assert Image.open(io.BytesIO(base64.b64decode(block["content"][1]["source"]["data"]))).size == (640, 360)


async def test_iteration_cap_and_truncation_are_errors_and_history_stays_valid(anthropic_api, llm_settings, ws):
    agent = make_agent(tuned(llm_settings, max_iterations=2), ws)
    anthropic_api.enqueue(tool_use(("think", {"thought": "1"})), tool_use(("think", {"thought": "2"})))
    events = await collect(agent.process_message("cli:a", "loop"))
    assert events[-1].type is E.ERROR and "llm.max_iterations" in events[-1].data["text"]
    anthropic_api.enqueue(Reply([{"type": "text", "text": "partial"}], "max_tokens"))
    events = await collect(agent.process_message("cli:a", "again"))
    assert kinds(events) == ["error"] and "llm.max_tokens" in events[-1].data["text"]
    anthropic_api.enqueue(text("Which camera do you mean?"))
    events = await collect(agent.process_message("cli:a", "watch it"))
    assert kinds(events) == ["ask_user"]  # a question back to the user; the emulator accepted the history


async def test_cancelled_turn_leaves_every_tool_use_answered(anthropic_api, llm_settings, ws):
    reg = build_registry()

    async def hang(args: NoArgs, ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(3600)
        return ToolResult("never")

    reg.register("hang", "Never returns.", NoArgs, hang)
    agent = make_agent(llm_settings, ws, reg)
    anthropic_api.enqueue(tool_use(("hang", {})), text("ok"))
    gen = agent.process_message("cli:a", "go")
    async for ev in gen:
        if ev.type is E.TOOL_CALL:
            break
    task = asyncio.ensure_future(gen.__anext__())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await gen.aclose()
    assert not agent.busy("cli:a")
    events = await collect(agent.process_message("cli:a", "still there?"))
    assert events[-1].type is E.RESPONSE
    assert "interrupted" in anthropic_api.requests[-1].body["messages"][2]["content"][0]["content"][0]["text"]


async def test_seeded_alert_gives_a_thread_its_context(anthropic_api, llm_settings, ws):
    agent = make_agent(llm_settings, ws)
    await agent.seed_session("slack:T1:C9:1700.1", "Person at the loading dock after hours.", jpeg(800, 600))
    anthropic_api.enqueue(text("It was one person near door 2."))
    await collect(agent.process_message("slack:T1:C9:1700.1", "who was it?"))
    msgs = anthropic_api.requests[0].body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[0]["content"][0]["type"] == "image"
    # The alert is quoted as data in the user turn, never put in the model's mouth.
    assert '<data kind="alert">\nPerson at the loading dock after hours.\n</data>' in msgs[0]["content"][1]["text"]
    assert "Person at" not in msgs[1]["content"][0]["text"]
