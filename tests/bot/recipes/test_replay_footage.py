"""The issue-14 story on real pipelines: the model composes a line count, saves it, a replay runs it elsewhere
with no model call, and the exported script counts what the bot counted."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.agent.loop import Agent
from bot.agent.sessions import SessionStore
from bot.commands.dispatch import run_command
from bot.config import Settings
from bot.events import EventType
from bot.llm.client import LLMClient
from bot.pipelines.manager import LIVE, PipelineManager
from bot.rights import OPERATOR
from tests.bot.recipes.helpers import Rig, rig
from tests.fakes.anthropic_api import text, tool_use
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video

pytestmark = pytest.mark.slow
SESSION = "cli:door"


async def settle(mgr: PipelineManager, pid: str, timeout: float = 60.0) -> dict[str, float]:
    """Wait until the pipeline on a file has finished; its final line totals."""
    deadline = time.monotonic() + patience(timeout)
    while (await mgr.status(pid)).status in LIVE:
        assert time.monotonic() < deadline, f"{pid} still running after {timeout}s"
        await asyncio.sleep(0.2)
    latest = mgr.latest(pid)
    assert latest is not None
    return {k: latest.values[k] for k in ("count_in", "count_out")}


@pytest.fixture
async def r(llm_settings: Settings, direct_backend):
    rg = rig(llm_settings, direct_backend)
    yield rg
    await rg.mgr.stop_all()


def videos(r: Rig) -> tuple[Path, Path]:
    folder = r.ws.root / "videos"
    folder.mkdir(exist_ok=True)
    return make_video(folder / "door.mp4"), make_video(folder / "side-door.mp4", frames=45)


async def compose_and_save(r: Rig, anthropic_api, door: Path) -> Agent:
    llm = LLMClient(r.settings, r.ws.state_dir / "usage.json", retry_base_delay=0.001)
    agent = Agent(llm=llm, tools=r.tools, sessions=SessionStore(r.ws.sessions_dir), settings=r.settings,
                  workspace=r.ws, services=r.services, turn_end=[r.recipes.on_turn_end])
    anthropic_api.enqueue(
        tool_use(("start_pipeline", {"video_reference": str(door), "pipeline_name": "door", "model_id": "builtin/faces",
                                     "line": "middle"})),
        text("Counting faces crossing the middle of the door video."),
        tool_use(("save_recipe", {"name": "door-count", "description": "count faces crossing the door line"})),
        text("Saved as door-count."),
    )
    first = [ev async for ev in agent.process_message(SESSION, "count faces crossing the door", None, OPERATOR)]
    assert first[-1].type is EventType.RESPONSE
    second = [ev async for ev in agent.process_message(SESSION, "save this as door-count", None, OPERATOR)]
    saved = [e for e in second if e.type is EventType.TOOL_RESULT]
    assert saved and not saved[0].data["is_error"] and "Saved recipe *door-count*" in saved[0].data["text"]
    await llm.aclose()
    return agent


async def test_saved_line_count_replays_on_another_video_without_the_model(r: Rig, anthropic_api) -> None:
    door, side = videos(r)
    await compose_and_save(r, anthropic_api, door)
    original = r.mgr.resolve("door")
    composed = await settle(r.mgr, original.pipeline_id)
    requests = len(anthropic_api.requests)

    reply = await run_command(f"recipe run door-count source={side}", r.command(session=SESSION))

    assert len(anthropic_api.requests) == requests  # replayed with 0 Messages API requests
    assert reply.ok, reply.text
    assert "Recipe *door-count* replayed (no model calls)" in reply.text and "line in" in reply.text
    replayed = [h for h in r.mgr.snapshot() if h.pipeline_id != original.pipeline_id]
    assert len(replayed) == 1 and replayed[0].video_reference == str(side)
    cfg, first_cfg = r.mgr.config(replayed[0].pipeline_id), r.mgr.config(original.pipeline_id)
    assert cfg.model_id == first_cfg.model_id == "builtin/faces" and cfg.workflow_spec == first_cfg.workflow_spec
    assert await settle(r.mgr, replayed[0].pipeline_id) == composed == {"count_in": 1, "count_out": 1}
    meta = json.loads((r.ws.root / "recipes" / "door-count.json").read_text())["metadata"]
    assert meta["successes"] == 1 and meta["failures"] == 0 and meta["last_used"]
    # The agent's next turn lists the recipe in its turn context, as quoted data (never in the system prompt).
    anthropic_api.enqueue(text("ok"))
    llm = LLMClient(r.settings, r.ws.state_dir / "usage.json")
    agent = Agent(llm=llm, tools=r.tools, sessions=SessionStore(r.ws.sessions_dir), settings=r.settings,
                  workspace=r.ws, services=r.services, turn_end=[r.recipes.on_turn_end])
    [ev async for ev in agent.process_message("cli:other", "hi", None, OPERATOR)]
    await llm.aclose()
    request = anthropic_api.requests[-1].body
    turn = json.dumps(request["messages"][-1])
    assert "## Recipes" in turn and "door-count: count faces crossing the door line" in turn
    assert '<data kind=\\"saved recipes\\">' in turn and "door-count" not in json.dumps(request["system"])


async def test_exported_script_counts_the_same_crossings_as_the_bot(r: Rig, anthropic_api) -> None:
    door, side = videos(r)
    await compose_and_save(r, anthropic_api, door)
    bot_counts = await settle(r.mgr, r.mgr.resolve("door").pipeline_id)

    reply = await run_command("recipe export door-count", r.command(session=SESSION))

    assert reply.ok and reply.file and reply.file_name == "door-count.py"
    script = r.ws.root / "exports" / "door-count.py"
    assert script.read_bytes() == reply.file and str(script) in reply.text
    frames = r.ws.root / "frames-out"
    run = subprocess.run([sys.executable, str(script), "--source", str(door), "--save-frames", str(frames)],
                         capture_output=True, text=True, timeout=240, cwd=r.ws.root)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert rows[-1]["done"] and rows[-1]["frames"] == 60
    assert {k: rows[-1][k] for k in ("count_in", "count_out")} == bot_counts == {"count_in": 1, "count_out": 1}
    assert rows[0]["predictions"]["counts"].get("face") == 2  # per-frame JSON lines with the detections
    assert len(list(frames.glob("*.jpg"))) == 60
