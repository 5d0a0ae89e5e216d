"""usage.json is written off the event loop (issue 34: 50 calls settling at once each wrote and fsync'd it on the
loop, 7.6 ms a call in a 50-thread burst, profiled), and nothing a reader sees changes: the budget figures move at
once, the file holds the call when chat returns, and calls settling together are all counted."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

import bot.llm.usage as usage_module
from bot.llm.usage import UsageTracker
from tests.bot.llm.test_llm import SYSTEM, TOOLS, client
from tests.fakes.anthropic_api import text
from tests.fixtures.llm_clients import close_llm_clients  # noqa: F401 - closes the clients

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of each usage.json write."""
    seen: list[int] = []
    real = usage_module.write_atomic

    def noted(*args, **kwargs):
        seen.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(usage_module, "write_atomic", noted)
    return seen


async def test_chat_returns_with_the_file_holding_the_call_written_off_the_loop(
        anthropic_api, llm_settings, tmp_path: Path, writes: list[int]) -> None:
    llm = client(llm_settings, tmp_path)
    for n in (1, 2):
        anthropic_api.enqueue(text(f"answer {n}"))
        resp = await llm.chat(HELLO, TOOLS, SYSTEM)
        (day,) = json.loads((tmp_path / "usage.json").read_text()).values()
        assert day["calls"] == n and resp.cost > 0 and llm.usage.today()["calls"] == n
    assert len(writes) == 2 and threading.get_ident() not in writes


async def test_calls_settling_together_are_all_counted_in_the_file(anthropic_api, llm_settings, tmp_path: Path,
                                                                   writes: list[int]) -> None:
    llm = client(llm_settings, tmp_path)
    for n in range(20):
        anthropic_api.enqueue(text(f"answer {n}"))
    answers = await asyncio.gather(*(llm.chat(HELLO, TOOLS, SYSTEM) for _ in range(20)))
    (day,) = json.loads((tmp_path / "usage.json").read_text()).values()
    assert day["calls"] == 20 == llm.usage.today()["calls"]
    assert abs(day["cost"] - sum(a.cost for a in answers)) < 1e-6
    assert 1 <= len(writes) <= 20  # a save that waited for another's may find its call written already


def test_a_save_with_nothing_new_writes_nothing_and_add_still_writes_at_once(tmp_path: Path, writes: list[int]) -> None:
    tracker = UsageTracker("claude-sonnet-4-5", tmp_path / "usage.json")
    tracker.save()
    assert writes == [] and not (tmp_path / "usage.json").exists()
    tracker.add({"input_tokens": 10, "output_tokens": 5})
    assert len(writes) == 1 and json.loads((tmp_path / "usage.json").read_text())
    tracker.save()
    assert len(writes) == 1
