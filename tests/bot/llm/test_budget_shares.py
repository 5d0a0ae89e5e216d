"""Shares of the daily LLM budget, through the real agent loop on the Messages API emulator: one member cannot spend
it for everyone, one channel neither, and the heartbeat keeps its reserve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.agent.loop import Agent
from bot.agent.sessions import SessionStore
from bot.config import Settings
from bot.events import EventType
from bot.llm.client import LLMClient
from bot.rights import OPERATOR, Requester
from bot.services import Services
from tests.fakes.anthropic_api import text
from tools import build_registry
from workspace import Workspace


def budgeted(settings: Settings, root: Path, **llm: float) -> Settings:
    return settings.model_copy(update={"workspace": root, "llm": settings.llm.model_copy(update=llm)})


class Rig:
    def __init__(self, settings: Settings) -> None:
        self.ws = Workspace(settings.workspace)
        self.ws.init()
        self.llm = LLMClient(settings, self.ws.state_dir / "usage.json", retry_base_delay=0.001)
        self.agent = Agent(llm=self.llm, tools=build_registry(), sessions=SessionStore(self.ws.sessions_dir),
                           settings=settings, workspace=self.ws, services=Services(workspace=self.ws))
        self.turns = 0

    async def ask(self, api, who: Requester) -> str | None:
        """One turn in a new thread; the ERROR line if the turn was refused, else None."""
        self.turns += 1
        api.enqueue(text("Quiet at the door."))
        key = f"slack:T:{who.channel_id}:{self.turns}.0"
        events = [ev async for ev in self.agent.process_message(key, "how is the door?", [], who)]
        errors = [e.data["text"] for e in events if e.type is EventType.ERROR]
        return errors[0] if errors else None

    async def until_refused(self, api, who: Requester, most: int = 40) -> tuple[int, str]:
        for answered in range(most):
            if (line := await self.ask(api, who)) is not None:
                return answered, line
        raise AssertionError(f"{who} was never refused")


@pytest.fixture
async def rigs():
    made: list[Rig] = []
    yield made
    for r in made:
        await r.llm.aclose()


async def test_shares_hold_per_person_per_channel_and_the_heartbeat_keeps_its_reserve(
        llm_settings: Settings, anthropic_api, rigs, tmp_path) -> None:
    calibrate = Rig(budgeted(llm_settings, tmp_path / "cal"))
    rigs.append(calibrate)
    assert await calibrate.ask(anthropic_api, Requester.slack("U_CAL", "C_CAL")) is None
    turn = calibrate.llm.usage.today()["cost"]  # what one such turn costs on the emulator
    assert turn > 0

    rig = Rig(budgeted(llm_settings, tmp_path / "ws", cost_limit_daily=10 * turn, user_share=0.3,
                       channel_share=0.45, heartbeat_reserve=0.3))
    rigs.append(rig)
    alice, bob = Requester.slack("U_ALICE", "C_LOBBY"), Requester.slack("U_BOB", "C_LOBBY")

    answered, line = await rig.until_refused(anthropic_api, alice)
    assert answered >= 2 and "your share of today's LLM budget" in line and "llm.user_share" in line
    assert "resets at midnight" in line and " min" in line and "\n" not in line
    requests = len(anthropic_api.requests)
    again = await rig.ask(anthropic_api, alice)
    assert again is not None and "your share" in again
    assert len(anthropic_api.requests) == requests  # refused before the model is asked

    answered, line = await rig.until_refused(anthropic_api, bob)  # same channel: its share runs out first
    assert answered >= 1 and "this channel has used its share" in line and "llm.channel_share" in line

    others = [Requester.slack(f"U_{i}", f"C_{i}") for i in range(10)]  # everyone else, a channel each
    for who in others:
        _, line = await rig.until_refused(anthropic_api, who)
        if "your share" not in line:
            break
    assert "for conversations is used up" in line and "llm.heartbeat_reserve" in line
    people_line = await rig.ask(anthropic_api, OPERATOR)  # the operator is held by the reserve too
    assert people_line is not None and "for conversations is used up" in people_line

    requests = len(anthropic_api.requests)
    anthropic_api.enqueue(text("Someone lingered at the lobby door for 10 minutes."))
    events = [ev async for ev in rig.agent.process_heartbeat("tier 1: lobby door dwell")]
    assert [e for e in events if e.type is EventType.ERROR] == []
    assert len(anthropic_api.requests) == requests + 1  # the heartbeat still reaches the model

    spent = rig.llm.usage.today()["cost"]
    assert spent < rig.llm.settings.llm.cost_limit_daily  # nobody spent the day for everyone
    [day] = json.loads((rig.ws.state_dir / "usage.json").read_text()).values()
    by = day["by"]
    assert by["user:U_ALICE"] < 0.3 * 10 * turn + 2 * turn  # over its share by at most one call
    assert "channel:C_LOBBY" in by and "people" in by


async def test_shares_survive_a_restart(llm_settings: Settings, anthropic_api, rigs, tmp_path) -> None:
    settings = budgeted(llm_settings, tmp_path / "ws", cost_limit_daily=1.0, user_share=1e-9)
    first = Rig(settings)
    rigs.append(first)
    alice = Requester.slack("U_ALICE", "C_LOBBY")
    answered, line = await first.until_refused(anthropic_api, alice)
    assert answered == 1 and "your share" in line
    again = Rig(settings)  # a new process reads today's spend per person back
    rigs.append(again)
    assert "your share" in (await again.ask(anthropic_api, alice) or "")
