"""get_events answers from the event log with numbers: totals per camera and rule, crossings in/out since a time."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.agent.tools import ToolContext
from bot.config import Settings, load_settings
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.events_log import EventLog
from bot.monitoring.since import parse_since
from bot.services import Services
from tools import build_registry

TZ = "Europe/Berlin"


@pytest.fixture
def rig(tmp_path: Path, base_env: dict[str, str]) -> tuple[ToolContext, AlertRouter]:
    settings: Settings = load_settings(base_env, heartbeat={"timezone": TZ})
    events = EventLog(tmp_path / "events.jsonl")
    router = AlertRouter(tmp_path / "alerts.json", events=events)
    return ToolContext(settings=settings, services=Services(events=events, router=router)), router


NINE = datetime.fromtimestamp(time.time() - 3 * 3600, ZoneInfo(TZ)).replace(second=0, microsecond=0)  # "since 9"


def at(minutes: float) -> float:
    """`minutes` after the 'since' time (negative: before it)."""
    return NINE.timestamp() + minutes * 60


def crossing(router: AlertRouter, t: float, cin: int, cout: int, held: str | None = None, pid: str = "p1") -> None:
    router.record(Alert("door", "line_crossed", f"line crossed (totals in {cin} / out {cout})",
                        {"person": 1, "count_in": cin, "count_out": cout}, t, b"jpeg", pid), held)


async def test_crossings_since_nine_count_only_what_moved_after_nine_held_ones_included(rig) -> None:
    ctx, router = rig
    crossing(router, at(-50), 3, 1)  # before 9: in 3 / out 1 already
    crossing(router, at(5), 5, 1)
    crossing(router, at(6), 6, 2, held="cooldown")  # not posted, still a crossing
    crossing(router, at(-500), 1, 0, pid="p2")  # another run of the door pipeline, before 9
    crossing(router, at(30), 4, 0, pid="p2")
    router.record(Alert("yard", "class_appears:*", "person appeared", {"person": 1}, at(40)), "muted")

    res = await build_registry().execute("get_events", {"since": NINE.strftime("%H:%M")}, ctx)
    assert not res.is_error, res.text
    # p1: 3->5->6 in, 1->1->2 out after 9 = in 3 / out 1; p2: 1->4 in = in 3
    assert "door: line_crossed 3; crossings in 6 / out 1" in res.text
    assert "yard: class_appears:* 1" in res.text
    assert "4 not posted" not in res.text and "2 not posted: cooldown 1, muted 1" in res.text
    assert res.text.count("\n- ") == 4  # the four events after 9 listed, none before
    assert "[not posted: cooldown]" in res.text


async def test_camera_type_and_limit_narrow_the_answer(rig) -> None:
    ctx, router = rig
    now = time.time()
    for i in range(30):
        crossing(router, now - 600 + i, i + 1, 0)
    router.record(Alert("yard", "stalled", "no frames from yard for 40s", time=now - 5))
    reg = build_registry()

    res = await reg.execute("get_events", {"since": 3600, "camera": "door", "limit": 5}, ctx)
    assert "Events since" in res.text and ": 30." in res.text and "crossings in 30 / out 0" in res.text
    assert res.text.count("\n- ") == 5 and "yard" not in res.text
    health = await reg.execute("get_events", {"since": "3600", "event_type": "health"}, ctx)
    assert "yard: stalled 1" in health.text and "door" not in health.text
    none = await reg.execute("get_events", {"since": 1, "camera": "gate"}, ctx)
    assert none.text.endswith(": none.")


async def test_a_since_it_cannot_read_is_a_line_saying_what_it_takes(rig) -> None:
    ctx, _ = rig
    res = await build_registry().execute("get_events", {"since": "last tuesday"}, ctx)
    assert res.is_error and "HH:MM" in res.text and "ISO" in res.text


async def test_without_an_event_log_the_tool_says_so(settings: Settings) -> None:
    res = await build_registry().execute("get_events", {}, ToolContext(settings=settings))
    assert res.is_error and "event log is not available" in res.text


def test_since_forms() -> None:
    now = datetime(2026, 5, 1, 10, 30, tzinfo=ZoneInfo(TZ)).timestamp()
    assert now - parse_since("09:00", TZ, now) == 5400
    assert now - parse_since("9", TZ, now) == 5400
    assert now - parse_since("11:00", TZ, now) == 23.5 * 3600  # still ahead today: yesterday's
    assert now - parse_since(120, TZ, now) == 120
    assert now - parse_since("2026-05-01T10:00", TZ, now) == 1800
    assert now - parse_since("2026-05-01T08:00+00:00", TZ, now) == 1800
    assert now - parse_since(None, TZ, now) == 86400
    assert now - parse_since("2h", TZ, now) == now - parse_since("since 2 hours ago", TZ, now) == 7200
    assert now - parse_since("90m", TZ, now) == 5400 and now - parse_since("1d", TZ, now) == 86400
    assert now - parse_since("yesterday 18:00", TZ, now) == 16.5 * 3600
    assert now - parse_since("yesterday", TZ, now) == 34.5 * 3600  # its midnight


async def test_odd_lines_in_the_log_never_break_the_answer(rig, tmp_path: Path) -> None:
    ctx, router = rig
    crossing(router, at(5), 5, 1)
    with (tmp_path / "events.jsonl").open("a", encoding="utf-8") as f:
        for odd in ('{"id": "000000000002", "time": "noon", "camera": "door"}', "[1]", "\x00garbage",
                    json.dumps({"id": "000000000003", "time": at(6), "camera": 7, "counts": "many", "held": 1}),
                    '{"id": "000000000004", "time": 1.0, "camera": "do'):
            f.write(odd + "\n")
    crossing(router, at(7), 6, 2)
    res = await build_registry().execute("get_events", {"since": NINE.strftime("%H:%M")}, ctx)
    assert not res.is_error, res.text
    assert "door: line_crossed 2; crossings in 6 / out 2" in res.text  # both good events, around the odd lines
    assert "\n7: " in res.text  # the one readable odd line, its camera made text
