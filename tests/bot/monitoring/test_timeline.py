"""The day's observation timeline: counts on change (debounced), crossings, stays in a zone, alerts; bounded; recalled."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.tools import ToolContext
from bot.backends.base import Detection, InferenceResult
from bot.config import Settings
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.monitoring.timeline import Timeline
from bot.services import Services
from tests.bot.monitor_helpers import Clock, FakePipelines, dwell_result, make_router, result
from tools import build_registry
from workspace.memory import MemoryStore


def people(n: int, cars: int = 0) -> InferenceResult:
    dets = [Detection("person", 0.9, (10.0 * i, 0.0, 10.0 * i + 5, 20.0), i) for i in range(n)]
    dets += [Detection("car", 0.8, (200.0, 0.0, 260.0, 40.0), 100 + i) for i in range(cars)]
    return InferenceResult(detections=tuple(dets))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rig(tmp_path: Path, settings: Settings, clock: Clock):
    router, sink = make_router(tmp_path, clock, cooldown=0)
    pipes = FakePipelines()
    memory = MemoryStore(tmp_path, clock=clock, use_embeddings=False)
    return Monitor(router, pipes, settings, memory, clock=clock), pipes, memory, sink


async def test_a_street_hour_becomes_a_few_lines_with_the_numbers(rig, clock: Clock, settings: Settings) -> None:
    monitor, pipes, memory, sink = rig
    monitor.start()
    monitor.add_rule(Rule("time_in_zone", camera="street", threshold=30))
    monitor.add_rule(Rule("line_crossed", camera="street", enabled=False))  # its line's default alerts: off here
    pipes.add("street")
    pipes.push("street", result(count_in=0))
    for second in range(3600):  # an hour at 1 fps: the people detector flickers between 1 and 2 people
        n = 1 + second % 2
        pipes.push("street", InferenceResult(detections=people(n).detections,
                                             values={"line_counter_count_in": second // 600, "line_counter_count_out": 0}))
        clock.advance(1)
    pipes.push("street", people(6, cars=1))  # a group arrives: a big change is written at once
    for secs in (10.0, 35.0, 40.0):  # then one of them waits in the zone
        pipes.push("street", dwell_result(("person", 12, secs)))
        clock.advance(5)
    pipes.push("street", dwell_result(("person", 12, 0.0)))  # and walks out of it
    await monitor.flush()

    lines = memory.observations_by_camera()["street"]
    assert len(lines) <= 15, lines  # 3600 results: not a line per frame, nor one per flicker
    text = "\n".join(lines)
    assert "seen: 6 people, 1 car" in text
    assert "crossed: in +1 (totals in 1 / out 0)" in text and "crossed: in +5 (totals in 5 / out 0)" not in text
    assert "dwell: person #12 stayed 40 s in the zone" in text
    assert "ALERT time_in_zone>30s: person #12 in the zone for 35 s, over 30 s" in text
    assert [a.text for a in sink.alerts] == ["person #12 in the zone for 35 s, over 30 s"]

    recall = await build_registry().execute(
        "recall", {"query": "what happened on street today", "day": "today", "camera": "STREET"},
        ToolContext(settings=settings, services=Services(memory=memory)),
    )
    assert not recall.is_error, recall.text
    assert recall.text.splitlines()[1] == '<data kind="memory notes">'  # the notes come quoted as data
    first = recall.text.splitlines()[2]
    assert first == ("street: at most 6 people, 1 car at once; line crossings in 5 / out 0; "
                     "1 stays in the zone (longest person #12 40 s); 1 alerts")


async def test_the_log_of_a_camera_is_capped_per_day_with_one_line_saying_so(tmp_path: Path, clock: Clock) -> None:
    memory = MemoryStore(tmp_path, clock=clock, use_embeddings=False)
    timeline = Timeline(memory, clock, max_lines=12)
    for i in range(200):  # big swings: each one would be written
        timeline.observe("gate", people(0 if i % 2 else 8))
        timeline.note("gate", f"ALERT class_appears:*: person appeared ({i})")
        clock.advance(20)
    timeline.observe("yard", people(1))  # another camera has its own budget
    lines = memory.observations_by_camera()["gate"]
    assert len(lines) == 13 and lines[-1].endswith(
        "timeline full: 12 lines today; later counts, crossings and alerts on this camera are not logged until "
        "tomorrow (alerts are still sent)")
    assert memory.observations_by_camera()["yard"][0].endswith("seen: 1 person")

    again = Timeline(memory, clock, max_lines=12)  # a restart counts what the file already holds
    again.note("gate", "ALERT line_crossed: line crossed")
    assert len(memory.observations_by_camera()["gate"]) == 13
    clock.advance(86_400)  # the next day starts a new budget
    again.note("gate", "ALERT line_crossed: line crossed")
    assert len(memory.observations_by_camera()["gate"]) == 1


async def test_a_pipeline_that_ends_writes_what_was_still_pending(rig, clock: Clock) -> None:
    monitor, pipes, memory, _ = rig
    monitor.start()
    pipes.add("door", video="/videos/door.mp4", started_at=clock())  # a file that ends is not a dropped source
    pipes.push("door", result(faces=1, count_in=0))
    pipes.push("door", result(faces=1, count_in=1))
    clock.advance(5)
    pipes.push("door", dwell_result(("face", 3, 9.0)))  # still in the zone when the video ends
    await monitor.flush()
    pipes.set("door", status="finished")
    await monitor.check_health()
    await monitor.check_health()  # once only
    lines = memory.observations_by_camera()["door"]
    assert [line.split(" ", 1)[1] for line in lines] == [
        "seen: 1 face", "crossed: in +1 (totals in 1 / out 0)",
        "ALERT line_crossed: line crossed (in +1; totals in 1 / out 0)",  # the guessed default rule for a line
        "dwell: face #3 stayed 9 s in the zone",
    ]


async def test_recall_of_a_day_says_what_to_type_for_a_bad_day(tmp_path: Path, clock: Clock, settings: Settings) -> None:
    memory = MemoryStore(tmp_path, clock=clock, use_embeddings=False)
    ctx = ToolContext(settings=settings, services=Services(memory=memory))
    bad = await build_registry().execute("recall", {"query": "x", "day": "last week"}, ctx)
    assert bad.is_error and "day takes 'today', 'yesterday' or YYYY-MM-DD, not 'last week'." in bad.text
    empty = await build_registry().execute("recall", {"query": "x", "day": "yesterday", "camera": "cam1"}, ctx)
    assert not empty.is_error and empty.text.startswith("No observations for cam1 on 2026-02-24")
