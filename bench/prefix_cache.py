"""How much of each request is the byte-identical cached prefix (tools + stable system), turn 1 vs turn 2."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from bot.agent import Agent
from bot.config import load_settings
from bot.llm import LLMClient
from bot.sessions import SessionStore
from bot.usage import cost_of
from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, Recorded, text, tool_use
from tools import build_registry
from workspace import Workspace
from workspace.memory import MemoryStore


def _prefix(body: dict[str, Any]) -> str:
    """tools + system blocks up to the last cache_control marker, serialised canonically."""
    system = body.get("system") or []
    marked = [i for i, b in enumerate(system) if "cache_control" in b]
    return json.dumps([body.get("tools") or [], system[: marked[-1] + 1] if marked else []], sort_keys=True)


def _row(n: int, turn: int, rec: Recorded, first_prefix: str, model: str) -> str:
    prefix = _prefix(rec.body)
    u = rec.usage
    prompt = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
    uncached = cost_of({"input_tokens": prompt, "output_tokens": u["output_tokens"]}, model)
    return (f"{n:>3} {turn:>4} {len(rec.raw):>9} {len(prefix):>9} {len(prefix) / len(rec.raw):>7.1%} "
            f"{'yes' if prefix == first_prefix else 'NO':>9} {u['cache_creation_input_tokens']:>8} "
            f"{u['cache_read_input_tokens']:>8} {u['input_tokens']:>7} {cost_of(u, model) / uncached:>10.2f}")


async def _run(api: FakeAnthropic, root: Path) -> tuple[list[int], str]:
    settings = load_settings({"VISION_AGENT_WORKSPACE": str(root), "ANTHROPIC_BASE_URL": api.url,
                              "ANTHROPIC_API_KEY": API_KEY, "VISION_AGENT_HEARTBEAT_MINUTES": "0"})
    ws = Workspace(root)
    ws.init()
    llm = LLMClient(settings, ws.state_dir / "usage.json")
    agent = Agent(llm=llm, tools=build_registry(), sessions=SessionStore(ws.sessions_dir), settings=settings,
                  workspace=ws, services={"memory": MemoryStore(root, use_embeddings=False)})
    api.enqueue(tool_use(("think", {"thought": "The user wants an overview; list the main abilities."})),
                text("I can run detectors on images, watch cameras with pipelines and remember what I see."),
                tool_use(("recall", {"query": "loading dock"})),
                text("Nothing about the loading dock is in memory yet."))
    turns: list[int] = []
    for turn, question in enumerate(("What can you do?", "What do you know about the loading dock?"), 1):
        async for _ in agent.process_message("bench:prefix", question):
            pass
        turns += [turn] * (len(api.ok_requests) - len(turns))
    await llm.aclose()
    return turns, settings.llm.model


def main() -> None:
    with FakeAnthropic(min_cache_tokens=1024) as api, tempfile.TemporaryDirectory() as tmp:
        turns, model = asyncio.run(_run(api, Path(tmp) / "ws"))
        reqs = api.ok_requests
        first = _prefix(reqs[0].body)
        print("Requests of two agent turns (each turn: a tool call, then the answer), emulated prompt cache.")
        print("  #  turn  req bytes  prefix B  prefix%  identical  cache_wr  cache_rd  uncached  cost/no-cache")
        for n, (turn, rec) in enumerate(zip(turns, reqs, strict=False), 1):
            print(_row(n, turn, rec, first, model))
        t1 = [r for t, r in zip(turns, reqs, strict=False) if t == 1][0]
        t2 = [r for t, r in zip(turns, reqs, strict=False) if t == 2][0]
        same = _prefix(t1.body) == _prefix(t2.body)
        print(f"turn-1 vs turn-2 first request: cached prefix byte-identical = {same}; "
              f"prefix share of request bytes {len(_prefix(t1.body)) / len(t1.raw):.1%} -> "
              f"{len(_prefix(t2.body)) / len(t2.raw):.1%}")
        total = sum(r.usage["input_tokens"] + r.usage["cache_creation_input_tokens"]
                    + r.usage["cache_read_input_tokens"] for r in reqs)
        read = sum(r.usage["cache_read_input_tokens"] for r in reqs)
        print(f"prompt tokens served from cache over all {len(reqs)} requests: {read / total:.1%}")


if __name__ == "__main__":
    main()
