"""Line counting set up on a camera: composed by the model (emulated Messages API) vs replayed from a recipe.

One run, the same real in-process pipeline (builtin/faces on a generated clip, line=middle) both ways. The model's
turn is scripted in the Messages API emulator (plan, start_pipeline, check the results, answer), so its calls and
prompt tokens are what the real API would be sent; the emulator answers at once, so its seconds leave out the
model's own latency (each real call adds it). The replay is `/vision recipe run door-count source=<another clip>`.
Quick mode: shorter clips (QUICK_FRAMES), the same turn and replay.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402

FRAMES, QUICK_FRAMES = 90, 30
QUESTION = "Set up line counting of faces crossing the middle of the door camera."


def _scripted(door: Path) -> list[Any]:
    from tests.fakes.anthropic_api import text, tool_use

    return [
        tool_use(("think", {"thought": "A line count needs a detector, a tracker and a line counter: start_pipeline "
                                       "with model_id and line=middle builds that workflow."})),
        tool_use(("start_pipeline", {"video_reference": str(door), "pipeline_name": "door",
                                     "model_id": "builtin/faces", "line": "middle"})),
        tool_use(("get_pipeline_results", {"pipeline_id": "door", "max_results": 3})),
        text("Counting faces crossing the middle of the door camera; results are arriving."),
    ]


def _parts(root: Path, api_url: str) -> tuple[Any, Any, Any]:
    """Settings, workspace and the agent's real pieces over the in-process backend."""
    from bot.backends.direct.backend import DirectBackend
    from bot.config import load_settings
    from bot.pipelines.manager import PipelineManager
    from bot.recipes.service import RecipeService
    from bot.services import Services
    from tests.fakes.anthropic_api import API_KEY
    from tools import build_registry
    from workspace import Workspace

    settings = load_settings({"VISION_AGENT_WORKSPACE": str(root), "ANTHROPIC_BASE_URL": api_url,
                              "ANTHROPIC_API_KEY": API_KEY, "VISION_AGENT_HEARTBEAT_MINUTES": "0"})
    ws = Workspace(root)
    ws.init()
    backend = DirectBackend(settings)
    mgr = PipelineManager(lambda: backend, ws.state_dir / "active_state.json", settings)
    tools = build_registry()
    recipes = RecipeService(ws, settings, tools)
    return settings, ws, Services(workspace=ws, pipelines=mgr, recipes=recipes)


async def _compose(api: Any, settings: Any, ws: Any, services: Any, door: Path) -> dict[str, float]:
    from bot.agent.loop import Agent
    from bot.agent.sessions import SessionStore
    from bot.llm.client import LLMClient
    from bot.llm.usage import cost_of
    from bot.rights import OPERATOR

    llm = LLMClient(settings, ws.state_dir / "usage.json")
    agent = Agent(llm=llm, tools=services.recipes.registry, sessions=SessionStore(ws.sessions_dir),
                  settings=settings, workspace=ws, services=services, turn_end=[services.recipes.on_turn_end])
    api.enqueue(*_scripted(door))
    start = time.perf_counter()
    async for _ in agent.process_message("bench:door", QUESTION, None, OPERATOR):
        pass
    seconds = time.perf_counter() - start
    await llm.aclose()
    reqs = api.ok_requests
    usage = [r.usage for r in reqs]
    prompt = sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in usage)
    return {"calls": len(reqs), "prompt": prompt, "output": sum(u["output_tokens"] for u in usage),
            "cost": sum(cost_of(u, settings.llm.model) for u in usage), "seconds": seconds}


async def _replay(api: Any, settings: Any, ws: Any, services: Any, side: Path) -> tuple[dict[str, float], str]:
    from bot.commands.context import CommandContext
    from bot.commands.dispatch import run_command
    from bot.rights import LOCAL_CHANNEL, OPERATOR

    services.recipes.save("door-count", "line count at the door", "bench:door", OPERATOR)
    before = len(api.requests)
    ctx = CommandContext(settings, services, user_id=LOCAL_CHANNEL, channel_id=LOCAL_CHANNEL, session_key="bench:door", operator=True)
    start = time.perf_counter()
    reply = await run_command(f"recipe run door-count source={side}", ctx)
    seconds = time.perf_counter() - start
    calls = len(api.requests) - before
    return {"calls": calls, "prompt": 0, "output": 0, "cost": 0.0, "seconds": seconds}, reply.text


async def _warm(services: Any, clip: Path) -> None:
    """Import inference and load the detector once, so neither side pays the process's start-up."""
    from bot.pipelines.request import StartRequest

    mgr = services.pipelines
    handle = await mgr.start(StartRequest(str(clip), "warm-up", model_id="builtin/faces"))
    while mgr.latest(handle.pipeline_id) is None and (await mgr.status(handle.pipeline_id)).status == "running":
        await asyncio.sleep(0.1)
    await mgr.stop(handle.pipeline_id)


async def _run(api: Any, root: Path, frames: int = FRAMES) -> tuple[dict[str, dict[str, float]], str]:
    from tests.fixtures.inference import make_video

    settings, ws, services = _parts(root, api.url)
    clips = root / "videos"
    clips.mkdir()
    door, side, warm = (make_video(clips / f"{n}.mp4", frames=frames) for n in ("door", "side-door", "warm"))
    try:
        await _warm(services, warm)
        composed = await _compose(api, settings, ws, services, door)
        replayed, reply = await _replay(api, settings, ws, services, side)
    finally:
        await services.pipelines.stop_all()
        await services.pipelines.backend.close()
    return {"composed by the model": composed, "replayed from a recipe": replayed}, reply


def main(quick: bool = False) -> Headline:
    from tests.fakes.anthropic_api import FakeAnthropic

    with FakeAnthropic() as api, tempfile.TemporaryDirectory() as tmp:
        rows, reply = asyncio.run(_run(api, Path(tmp) / "ws", QUICK_FRAMES if quick else FRAMES))
    print(f"'{QUESTION}' on a 640x480 clip, builtin/faces + line=middle, real in-process pipeline.")
    print(f"{'':24} {'LLM calls':>9} {'prompt tok':>10} {'output tok':>10} {'cost $':>8} {'seconds':>8}")
    for name, r in rows.items():
        print(f"{name:24} {r['calls']:>9.0f} {r['prompt']:>10.0f} {r['output']:>10.0f} {r['cost']:>8.4f} "
              f"{r['seconds']:>8.2f}")
    print("Seconds for the composed turn exclude the model's latency (the emulator answers at once); add a real "
          "call's latency per LLM call.")
    print("Replay reply: " + reply.replace("\n", " | "))
    composed, replayed = rows["composed by the model"], rows["replayed from a recipe"]
    return Headline(f"replay {replayed['calls']:.0f} LLM calls, {replayed['seconds']:.1f} s vs composed "
                    f"{composed['calls']:.0f} calls, {composed['prompt']:.0f} prompt tok, {composed['seconds']:.1f} s",
                    "the replay needs no model", None)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
