"""Caps on running pipelines, per Slack user and in total: one reply asking for 60 starts gets its share and a line
for the rest; every surface obeys the same count; restoring at start-up is never refused."""

from __future__ import annotations

from typing import Any

import pytest

from bot.agent.loop import Agent
from bot.agent.sessions import SessionStore
from bot.commands.dispatch import CommandContext, run_command
from bot.config import Settings
from bot.llm.client import LLMClient
from bot.pipelines.manager import PipelineManager
from bot.pipelines.restore import restore_all
from bot.pipelines.state import PipelineConfig, load_state, save_state
from bot.rights import Requester
from bot.services import Services
from tests.bot.agent.test_unattended_tools import result_text, tool_results
from tests.fakes.anthropic_api import text, tool_use
from tests.tools.fake_backend import FakeBackend
from tools import build_registry
from workspace import Workspace

ALICE, BOB = Requester.slack("U_ALICE", "C_OPS", "public"), Requester.slack("U_BOB", "C_OPS", "public")


def capped(settings: Settings, per_user: int, total: int) -> Settings:
    return settings.model_copy(update={"pipelines": settings.pipelines.model_copy(
        update={"max_per_user": per_user, "max_total": total})})


class Rig:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ws = Workspace(settings.workspace)
        self.ws.init()
        self.backend = FakeBackend()
        self.mgr = PipelineManager(lambda: self.backend, self.ws.state_dir / "active_state.json", settings)
        self.services = Services(workspace=self.ws, pipelines=self.mgr)
        self.llm = LLMClient(settings, self.ws.state_dir / "usage.json", retry_base_delay=0.001)
        self.agent = Agent(llm=self.llm, tools=build_registry(), sessions=SessionStore(self.ws.sessions_dir),
                           settings=settings, workspace=self.ws, services=self.services)

    def running(self, owner: str | None = "any") -> int:
        live = [h for h in self.mgr.snapshot() if h.status == "running"]
        return len(live) if owner == "any" else sum(self.mgr.config(h.pipeline_id).owner == owner for h in live)

    async def command(self, line: str, who: Requester) -> Any:
        ctx = CommandContext(self.settings, self.services, user_id=who.user_id or "cli",
                             channel_id=who.channel_id or "cli", operator=who.operator)
        return await run_command(line, ctx)


@pytest.fixture
async def make_rig():
    rigs: list[Rig] = []

    def make(settings: Settings) -> Rig:
        rigs.append(Rig(settings))
        return rigs[-1]

    yield make
    for r in rigs:
        await r.llm.aclose()


def starts(n: int, prefix: str = "cam") -> list[tuple[str, dict[str, Any]]]:
    return [("start_pipeline", {"video_reference": str(i % 3), "pipeline_name": f"{prefix}{i}",
                                "model_id": "builtin/people"}) for i in range(n)]


async def test_one_reply_asking_for_sixty_starts_gets_the_askers_share_and_a_line_for_the_rest(
        llm_settings: Settings, anthropic_api, make_rig) -> None:
    rig = make_rig(capped(llm_settings, 5, 16))  # a per-user cap the defaults do not name
    anthropic_api.enqueue(tool_use(*starts(60)), text("Started what I could."))
    [ev async for ev in rig.agent.process_message("slack:T:C_OPS:1.0", "watch everything", [], ALICE)]

    results = list(tool_results(anthropic_api).values())
    assert len(results) == 60
    refused = [result_text(b) for b in results if b.get("is_error")]
    assert len(refused) == 55 and rig.running("U_ALICE") == 5 == rig.running()
    assert all("pipelines.max_per_user = 5" in line and "\n" not in line.strip() for line in refused)
    assert len(load_state(rig.mgr.state_path)) == 5

    # Bob has his own share, by command as by tool; stopping one of Alice's gives her room again.
    assert (await rig.command("start 1 name=bob1", BOB)).ok
    await rig.mgr.stop(rig.mgr.snapshot()[0].pipeline_id)
    assert (await rig.command("start 2 name=alice6", ALICE)).ok
    again = await rig.command("start 2 name=alice7", ALICE)
    assert not again.ok and "max_per_user" in again.text and rig.running("U_ALICE") == 5


async def test_the_total_cap_holds_everyone_and_the_operator_too(settings: Settings, make_rig) -> None:
    rig = make_rig(capped(settings, 3, 7))
    for i in range(3):
        assert (await rig.command(f"start 0 name=a{i}", ALICE)).ok
        assert (await rig.command(f"start 1 name=b{i}", BOB)).ok
    operator = Requester(operator=True)
    assert (await rig.command("start 2 name=op1", operator)).ok  # exempt from the per-user cap: 7th of 7
    for who in (Requester.slack("U_CAROL", "C_OPS"), operator):
        reply = await rig.command("start 2 name=late", who)
        assert not reply.ok and "pipelines.max_total = 7" in reply.text
    assert rig.running() == 7


async def test_the_operator_is_not_held_to_the_per_user_cap(settings: Settings, make_rig) -> None:
    rig = make_rig(capped(settings, 2, 0))  # 0: no total limit
    for i in range(6):
        assert (await rig.command(f"start {i % 3} name=op{i}", Requester(operator=True))).ok
    assert rig.running(None) == 6


async def test_restoring_at_start_up_is_never_refused(settings: Settings, make_rig) -> None:
    rig = make_rig(capped(settings, 2, 3))
    save_state(rig.mgr.state_path, [PipelineConfig(f"pipe_{i}", f"cam{i}", str(i % 3), "builtin/people",
                                                   owner="U_ALICE") for i in range(9)])
    restored = await restore_all(rig.mgr)
    assert [h.status for h in restored] == ["running"] * 9
    reply = await rig.command("start 0 name=one-more", BOB)  # over the total now: new starts wait
    assert not reply.ok and "max_total = 3" in reply.text
