"""Tier 2 through the real agent and the Messages API emulator: idle = zero calls, OK is silent, cap, chat wait."""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image

from bot.agent.loop import Agent
from bot.agent.sessions import SessionStore
from bot.config import Settings
from bot.llm.client import LLMClient
from bot.monitoring.monitor import Monitor
from bot.scheduling.heartbeat import Heartbeat
from bot.scheduling.inputs import SchedulerInputs
from bot.services import Services
from tests.bot.monitor_helpers import Clock, FakePipelines, make_router, result
from tests.fakes.anthropic_api import text
from tools import build_registry
from workspace import Workspace
from workspace.memory import MemoryStore

NOON = datetime(2026, 3, 4, 12, 0, tzinfo=UTC).timestamp()
OK_VARIANTS = [
    "HEARTBEAT_OK",
    "HEARTBEAT_OK.",
    "**HEARTBEAT_OK**",
    "  HEARTBEAT_OK \n",
    "HEARTBEAT_OK - all quiet",
    "Nothing new on the cameras. HEARTBEAT_OK",
]


def jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (20, 120, 40)).save(out, format="JPEG")
    return out.getvalue()


def heartbeat_settings(settings: Settings, **hb: object) -> Settings:
    return settings.model_copy(update={"heartbeat": settings.heartbeat.model_copy(update=hb)})


class Rig:
    """Agent (emulator-backed), monitor on fake pipelines, router with a recording sink, heartbeat."""

    def __init__(self, settings: Settings, root: Path, clock: Clock) -> None:
        self.ws = Workspace(root)
        self.ws.init()
        self.clock = clock
        self.llm = LLMClient(settings, self.ws.state_dir / "usage.json", retry_base_delay=0.001)
        self.memory = MemoryStore(root, clock=clock, use_embeddings=False)
        self.agent = Agent(
            llm=self.llm,
            tools=build_registry(),
            sessions=SessionStore(self.ws.sessions_dir),
            settings=settings,
            workspace=self.ws,
            services=Services(memory=self.memory),
        )
        self.router, self.sink = make_router(root, clock, cooldown=0)
        self.pipes = FakePipelines()
        self.pipes.add("door", started_at=clock())
        self.monitor = Monitor(self.router, self.pipes, settings, self.memory, clock=clock)
        self.monitor.start()
        self.inputs = SchedulerInputs(settings, agent=self.agent, monitor=self.monitor, router=self.router,
                                      pipelines=self.pipes, memory=self.memory, workspace=self.ws, clock=clock)
        self.hb = Heartbeat(self.inputs, max_wait_seconds=5)
        self.crossings = 0

    async def cross(self) -> None:
        """One person crosses the door line: a tier-1 event (and its alert)."""
        if self.crossings == 0:
            self.pipes.push("door", result(count_in=0))
        self.crossings += 1
        self.clock.advance(600)  # past the monitor's cooldown
        self.pipes.push("door", result(faces=1, count_in=self.crossings, frame=jpeg()))
        await self.monitor.flush()

    def heartbeat_alerts(self):
        return [a for a in self.sink.alerts if a.rule.startswith("heartbeat")]


@pytest.fixture
async def rig(llm_settings: Settings):
    r = Rig(llm_settings, llm_settings.workspace, Clock(NOON))
    yield r
    await r.llm.aclose()


async def test_idle_heartbeats_make_zero_llm_calls(rig: Rig, anthropic_api) -> None:
    outcomes = []
    for _ in range(30):
        rig.clock.advance(15 * 60)
        outcomes.append(await rig.hb.run())
    assert set(outcomes) == {"idle"}
    assert anthropic_api.requests == []
    # even an idle heartbeat is a sign of life for /healthz
    assert rig.hb.last_run == rig.clock() and rig.hb.last_outcome == "idle"


async def test_new_event_makes_one_call_and_every_ok_variant_posts_nothing(rig: Rig, anthropic_api) -> None:
    for n, variant in enumerate(OK_VARIANTS, start=1):
        anthropic_api.enqueue(text(variant))
        await rig.cross()
        assert await rig.hb.run() == "ok", variant
        assert len(anthropic_api.requests) == n
        assert await rig.hb.run() == "idle"  # the event was handed over: no second call for it
        assert len(anthropic_api.requests) == n
    assert rig.heartbeat_alerts() == []
    assert all(a.text.strip() for a in rig.sink.alerts)  # never an empty message
    body = anthropic_api.requests[0].body
    content = body["messages"][-1]["content"]
    assert any(b["type"] == "image" for b in content)  # the event's frame
    assert "[line_crossed] line crossed (in +1" in content[-1]["text"]


async def test_non_ok_answer_becomes_one_routed_alert_with_summary(rig: Rig, anthropic_api) -> None:
    anthropic_api.enqueue(text("**Someone entered through the door at noon.**\nThey carried a large box."))
    await rig.cross()
    assert await rig.hb.run() == "alert"

    [alert] = rig.heartbeat_alerts()
    assert alert.camera == "door" and alert.summary == "Someone entered through the door at noon."
    assert alert.frame is not None and alert.counts.get("count_in") == 1
    assert "HEARTBEAT ALERT: Someone entered" in rig.memory.get_daily_observations(camera="door")


async def test_heartbeat_waits_for_a_running_chat_turn(rig: Rig, anthropic_api) -> None:
    seen_busy: list[bool] = []

    def handler(body):
        if "Heartbeat at" in str(body["messages"][-1]["content"]):
            seen_busy.append(rig.agent.busy("cli:"))
            return text("HEARTBEAT_OK")
        return text("Here is what cam1 shows.", delay=0.6)

    anthropic_api.handler = handler
    await rig.cross()
    chat = asyncio.ensure_future(_drain(rig.agent.process_message("cli:main", "what is on cam1?")))
    await asyncio.sleep(0.1)
    assert rig.agent.busy("cli:")
    assert await rig.hb.run() == "ok"
    assert chat.done() and seen_busy == [False]  # the heartbeat's call came after the chat turn ended


async def test_daily_cap_stops_calls_and_says_so_once(llm_settings: Settings, anthropic_api) -> None:
    settings = heartbeat_settings(llm_settings, daily_llm_cap=2)
    rig = Rig(settings, settings.workspace, Clock(NOON))
    try:
        anthropic_api.handler = lambda body: text("HEARTBEAT_OK")
        outcomes = []
        for _ in range(4):
            await rig.cross()
            outcomes.append(await rig.hb.run())
        assert outcomes == ["ok", "ok", "capped", "capped"]
        assert len(anthropic_api.requests) == 2
        notices = [a for a in rig.sink.alerts if a.rule == "heartbeat_cap"]
        assert len(notices) == 1 and "daily_llm_cap" in notices[0].text
        assert rig.hb.calls_today == 2

        rig.clock.advance(24 * 3600)  # a new day: calls allowed again
        await rig.cross()
        assert await rig.hb.run() == "ok" and len(anthropic_api.requests) == 3
    finally:
        await rig.llm.aclose()


async def test_due_checklist_item_runs_without_events_then_waits_for_its_interval(rig: Rig, anthropic_api) -> None:
    (rig.ws.root / "HEARTBEAT.md").write_text(
        "# Heartbeat\n\n- Alert on anything odd.\n- [every 2h] Check the loading dock for parked trucks.\n"
    )
    anthropic_api.handler = lambda body: text("HEARTBEAT_OK")
    rig.pipes.latest_results["p_door"] = result(frame=jpeg())  # the dock camera is running: the model sees it
    assert await rig.hb.run() == "ok"
    content = anthropic_api.requests[0].body["messages"][-1]["content"]
    assert "Check the loading dock for parked trucks." in content[-1]["text"]
    assert [b["type"] for b in content].count("image") == 1
    rig.clock.advance(3600)
    assert await rig.hb.run() == "idle"
    rig.clock.advance(3601)
    assert await rig.hb.run() == "ok"
    assert len(anthropic_api.requests) == 2


async def test_outside_active_hours_nothing_runs_and_news_waits(llm_settings: Settings, anthropic_api) -> None:
    settings = heartbeat_settings(llm_settings, active_hours="07:00-09:00")
    rig = Rig(settings, settings.workspace, Clock(NOON))
    try:
        await rig.cross()
        assert await rig.hb.run() == "off-hours"
        assert anthropic_api.requests == [] and len(rig.monitor.news.pending()) == 1
    finally:
        await rig.llm.aclose()


async def _drain(gen) -> list:
    return [ev async for ev in gen]


async def test_daily_summary_counts_per_camera_in_an_isolated_session(rig: Rig, anthropic_api) -> None:
    from bot.scheduling.cron_jobs import daily_summary

    anthropic_api.handler = lambda body: text("Hi! I am here.")
    await _drain(rig.agent.process_message("cli:main", "hello"))  # a chat the summary must not touch
    chat_file = next(rig.ws.sessions_dir.glob("*.jsonl"))
    chat_before = chat_file.read_text()
    await rig.cross()
    rig.clock.advance(10)
    await rig.cross()
    rig.memory.store("a forklift parked by the gate", "observation", camera_id="yard")
    anthropic_api.handler = lambda body: text("Two people came in through the door; the yard was calm.")

    report = await daily_summary(rig.agent, rig.memory, rig.router)

    [posted] = [a for a in rig.sink.alerts if a.rule == "daily_summary"]
    assert posted.text == report
    # the numbers come from the monitor's timeline: counts on change, crossings, alerts
    assert "- door: 2 alerts (line_crossed ×2); at most 1 face at once; line crossings in 2 / out 0; 4 other notes" in report
    assert "- yard: 0 alerts; nothing counted; 1 other notes" in report
    assert report.endswith("Two people came in through the door; the yard was calm.")
    assert posted.counts == {"door": 2, "yard": 0}
    summary_request = anthropic_api.requests[-1].body["messages"]
    assert len(summary_request) == 1 and "hello" not in str(summary_request)  # no chat history in it
    assert "a forklift parked by the gate" in str(summary_request)
    assert chat_file.read_text() == chat_before


async def test_daily_summary_on_an_empty_day_posts_nothing_and_calls_nothing(rig: Rig, anthropic_api) -> None:
    from bot.scheduling.cron_jobs import daily_summary

    assert await daily_summary(rig.agent, rig.memory, rig.router) is None
    assert rig.sink.alerts == [] and anthropic_api.requests == []


async def test_without_a_model_tier_one_news_is_dropped_quietly(rig: Rig, anthropic_api) -> None:
    hb = Heartbeat(replace(rig.inputs, agent=None))
    await rig.cross()
    assert await hb.run() == "no-llm"
    assert rig.monitor.news.pending() == [] and anthropic_api.requests == []
    assert [a.rule for a in rig.sink.alerts] == ["line_crossed"]  # the tier-1 alert itself went out
