"""The agent and recipes through the Messages API emulator: save in the same turn, run_recipe instead of composing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.agent.loop import Agent
from bot.agent.sessions import SessionStore
from bot.config import Settings
from bot.events import EventType
from bot.llm.client import LLMClient
from bot.rights import OPERATOR, Requester
from tests.bot.recipes.helpers import Rig, rig
from tests.fakes.anthropic_api import text, tool_use
from tests.tools.fake_backend import FakeBackend, result


class CountingBackend(FakeBackend):
    """Each pipeline delivers a line-count result shortly after it starts, as a real one on a short clip does."""

    async def start_pipeline(self, pipeline_id: str, name: str, video_reference: str, on_result=None, **kw: Any):
        handle = await super().start_pipeline(pipeline_id, name, video_reference, on_result=on_result, **kw)
        asyncio.get_running_loop().call_later(
            0.1, self.emit, pipeline_id, result({"face": 2}, count_in=1, count_out=1))
        return handle


@pytest.fixture
def r(llm_settings: Settings) -> Rig:
    return rig(llm_settings, CountingBackend(), timeout=3)


@pytest.fixture
async def agent(r: Rig):
    llm = LLMClient(r.settings, r.ws.state_dir / "usage.json", retry_base_delay=0.001)
    yield Agent(llm=llm, tools=r.tools, sessions=SessionStore(r.ws.sessions_dir), settings=r.settings,
                workspace=r.ws, services=r.services, turn_end=[r.recipes.on_turn_end])
    await llm.aclose()


def clip(r: Rig, name: str) -> Path:
    path = r.ws.root / name
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    return path


def start(source: Path) -> tuple[str, dict[str, Any]]:
    return ("start_pipeline", {"video_reference": str(source), "pipeline_name": "door", "model_id": "builtin/faces",
                               "line": "10,0,10,100"})


async def turn(agent: Agent, message: str, who: Requester = OPERATOR, key: str = "cli:a") -> list:
    return [ev async for ev in agent.process_message(key, message, None, who)]


async def test_set_up_and_saved_in_one_turn(r: Rig, agent: Agent, anthropic_api) -> None:
    door = clip(r, "door.mp4")
    anthropic_api.enqueue(tool_use(start(door)), tool_use(("save_recipe", {"name": "door-count"})), text("Done."))
    events = await turn(agent, "count the door and save it as door-count")
    results = [e.data for e in events if e.type is EventType.TOOL_RESULT]
    assert [d["is_error"] for d in results] == [False, False], results
    saved = json.loads((r.ws.root / "recipes" / "door-count.json").read_text())
    assert saved["parameters"]["source"] == str(door) and saved["parameters"]["line"] == "10,0,10,100"


async def test_agent_runs_a_recipe_instead_of_composing(r: Rig, agent: Agent, anthropic_api) -> None:
    door, side = clip(r, "door.mp4"), clip(r, "side.mp4")
    anthropic_api.enqueue(tool_use(start(door)), text("Counting."))
    await turn(agent, "count the door")
    r.recipes.save("door-count", "count faces crossing the door line", "cli:a", OPERATOR)
    anthropic_api.enqueue(tool_use(("run_recipe", {"name": "door-count", "parameters": {"source": str(side)}})),
                          tool_use(("get_pipeline_results", {"pipeline_id": "side"})), text("Side door counted."))
    events = await turn(agent, "same for the side door", key="cli:b")
    ran = next(e.data for e in events if e.type is EventType.TOOL_RESULT and e.data["name"] == "run_recipe")
    assert not ran["is_error"], ran["text"]
    assert "replayed" in ran["text"] and "*side*" in ran["text"] and "line in 1 / out 1" in ran["text"]
    checked = next(e.data for e in events if e.type is EventType.TOOL_RESULT and e.data["name"] == "get_pipeline_results")
    assert not checked["is_error"] and "side is running" in checked["text"]  # the model verifies the outcome
    assert [c[1]["video_reference"] for c in r.mgr.backend.calls if c[0] == "start_pipeline"] == [str(door), str(side)]
    # The model saw the recipe in its turn context, quoted as data, before choosing it (never in the system prompt).
    asked = anthropic_api.requests[-3].body
    assert "door-count: count faces crossing the door line" in json.dumps(asked["messages"])
    assert "door-count" not in json.dumps(asked["system"])
    meta = json.loads((r.ws.root / "recipes" / "door-count.json").read_text())["metadata"]
    assert meta["successes"] == 1


async def test_run_recipe_is_refused_for_someone_the_allowlist_leaves_out(r: Rig, anthropic_api) -> None:
    guarded = r.settings.model_copy(update={"slack": r.settings.slack.model_copy(update={"allowed_users": ["U1"]})})
    g = rig(guarded, CountingBackend(), timeout=3)
    g.recipes.record("cli:a", OPERATOR, [], "")
    door = clip(g, "door.mp4")
    anthropic_api.enqueue(tool_use(start(door)), text("Counting."))
    llm = LLMClient(guarded, g.ws.state_dir / "usage.json", retry_base_delay=0.001)
    agent = Agent(llm=llm, tools=g.tools, sessions=SessionStore(g.ws.sessions_dir), settings=guarded,
                  workspace=g.ws, services=g.services, turn_end=[g.recipes.on_turn_end])
    await turn(agent, "count the door")
    g.recipes.save("door-count", "", "cli:a", OPERATOR)
    anthropic_api.enqueue(tool_use(("run_recipe", {"name": "door-count"})), text("I may not."))
    events = await turn(agent, "run door-count", Requester.slack("U2", "C1"), key="slack:T:C1:1.0")
    await llm.aclose()
    ran = next(e.data for e in events if e.type is EventType.TOOL_RESULT)
    assert ran["is_error"] and "Only <@U1>" in ran["text"]
    assert len([c for c in g.mgr.backend.calls if c[0] == "start_pipeline"]) == 1  # the replay never started one


async def test_replay_next_to_the_original_gets_a_free_name(r: Rig, agent: Agent, anthropic_api) -> None:
    anthropic_api.enqueue(tool_use(start(clip(r, "door.mp4"))), text("Counting."))
    await turn(agent, "count the door")
    r.recipes.save("door-count", "", "cli:a", OPERATOR)
    ok, reply = await r.recipes.run("door-count", {}, OPERATOR, r.services)
    assert ok and "*door-2*" in reply, reply
    ok, reply = await r.recipes.run("door-count", {"name": "front"}, OPERATOR, r.services)
    assert ok and "*front*" in reply, reply
