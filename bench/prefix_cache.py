"""How much of each request the emulated prompt cache serves, over three agent turns (cross-turn reuse)."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# After the path line, so `python bench/prefix_cache.py` finds the project's packages too.
from bench import Headline  # noqa: E402
from bot.agent.loop import Agent  # noqa: E402
from bot.agent.sessions import SessionStore  # noqa: E402
from bot.config import load_settings  # noqa: E402
from bot.llm.client import LLMClient  # noqa: E402
from bot.llm.usage import cost_of  # noqa: E402
from bot.services import Services  # noqa: E402
from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, Recorded, text, tool_use  # noqa: E402
from tools import build_registry  # noqa: E402
from workspace import Workspace  # noqa: E402
from workspace.memory import MemoryStore  # noqa: E402

QUESTIONS = ("What can you do?", "What do you know about the loading dock?", "Any parked cars in the lot?")
# Each turn's scripted model replies: a tool call, then the answer.
REPLIES = (
    (tool_use(("think", {"thought": "The user wants an overview; list the main abilities."})),
     text("I can run detectors on images, watch cameras with pipelines and remember what I see.")),
    (tool_use(("recall", {"query": "loading dock"})), text("Nothing about the loading dock is in memory yet.")),
    (tool_use(("think", {"thought": "Parking question: the parking-lot skill applies."})),
     text("I need a camera on the lot; which one should I use?")),
)
QUICK_TURNS = 2  # the fewest that still show reuse across turns


def _prefix(body: dict[str, Any]) -> str:
    """tools + system blocks up to the last system cache_control marker, serialised canonically."""
    system = body.get("system") or []
    marked = [i for i, b in enumerate(system) if "cache_control" in b]
    return json.dumps([body.get("tools") or [], system[: marked[-1] + 1] if marked else []], sort_keys=True,
                      separators=(",", ":"))


def _prompt(rec: Recorded) -> int:
    u = rec.usage
    return u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]


def _row(n: int, turn: int, rec: Recorded, first_prefix: str, model: str) -> str:
    prefix = _prefix(rec.body)
    u = rec.usage
    uncached = cost_of({"input_tokens": _prompt(rec), "output_tokens": u["output_tokens"]}, model)
    return (f"{n:>3} {turn:>4} {len(rec.raw):>9} {len(prefix):>9} {len(prefix) / len(rec.raw):>7.1%} "
            f"{'yes' if prefix == first_prefix else 'NO':>9} {u['cache_creation_input_tokens']:>8} "
            f"{u['cache_read_input_tokens']:>8} {u['input_tokens']:>7} "
            f"{u['cache_read_input_tokens'] / _prompt(rec):>7.1%} {cost_of(u, model) / uncached:>10.2f}")


async def _run(api: FakeAnthropic, root: Path, questions: tuple[str, ...]) -> tuple[list[int], str]:
    settings = load_settings({"VISION_AGENT_WORKSPACE": str(root), "ANTHROPIC_BASE_URL": api.url,
                              "ANTHROPIC_API_KEY": API_KEY, "VISION_AGENT_HEARTBEAT_MINUTES": "0"})
    ws = Workspace(root)
    ws.init()
    llm = LLMClient(settings, ws.state_dir / "usage.json")
    # Turns a few minutes apart, as in a real chat: the clock shown to the model changes every turn.
    times = iter(datetime(2026, 2, 11, 10, 0, tzinfo=UTC) + timedelta(minutes=7 * n) for n in range(99))
    agent = Agent(llm=llm, tools=build_registry(), sessions=SessionStore(ws.sessions_dir), settings=settings,
                  workspace=ws, services=Services(memory=MemoryStore(root, use_embeddings=False)),
                  clock=lambda: next(times))
    api.enqueue(*(reply for turn in REPLIES[: len(questions)] for reply in turn))
    turns: list[int] = []
    for turn, question in enumerate(questions, 1):
        async for _ in agent.process_message("bench:prefix", question):
            pass
        turns += [turn] * (len(api.ok_requests) - len(turns))
    await llm.aclose()
    return turns, settings.llm.model


def _share(reqs: list[Recorded]) -> float:
    return sum(r.usage["cache_read_input_tokens"] for r in reqs) / max(1, sum(_prompt(r) for r in reqs))


def main(quick: bool = False) -> Headline:
    """Full: three turns. Quick: the first two (still the real agent, SDK and emulated cache, across turns)."""
    questions = QUESTIONS[:QUICK_TURNS] if quick else QUESTIONS
    with FakeAnthropic(min_cache_tokens=1024) as api, tempfile.TemporaryDirectory() as tmp:
        turns, model = asyncio.run(_run(api, Path(tmp) / "ws", questions))
        reqs = api.ok_requests
        first = _prefix(reqs[0].body)
        print(f"Requests of {len(questions)} agent turns (each: a tool call, then the answer), emulated prompt cache.")
        print("  #  turn  req bytes  prefix B  prefix%  identical  cache_wr  cache_rd  uncached  read%  cost/no-cache")
        for n, (turn, rec) in enumerate(zip(turns, reqs, strict=False), 1):
            print(_row(n, turn, rec, first, model))
        openers = [next(r for t, r in zip(turns, reqs, strict=False) if t == k) for k in range(1, len(questions) + 1)]
        same = len({_prefix(r.body) for r in openers}) == 1
        print(f"first request of each turn: tools+system prefix byte-identical = {same}; prefix share of request "
              f"bytes {' -> '.join(f'{len(_prefix(r.body)) / len(r.raw):.1%}' for r in openers)}")
        print("first request of each turn, share of prompt tokens read from cache (history reuse across turns): "
              + " -> ".join(f"{r.usage['cache_read_input_tokens'] / _prompt(r):.1%}" for r in openers))
        later = [r for t, r in zip(turns, reqs, strict=False) if t > 1]
        later_label = f"turn{'s 2-' if len(questions) > 2 else ' '}{len(questions)}"
        print(f"prompt tokens served from cache: all {len(reqs)} requests {_share(reqs):.1%}; "
              f"{later_label} {_share(later):.1%}")
    return Headline(figure=f"cache read {_share(later):.1%} of prompt tokens in {later_label} ({_share(reqs):.1%} "
                           f"over all {len(reqs)} requests); tools+system prefix "
                           f"{'identical' if same else 'CHANGED'} across turns",
                    goal="no goal (cross-turn reuse)", met=None)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
