"""A camera's faults through the tier-1 health path: the health check (every 10 s in `serve`) says each fault once
where the camera's alerts go, records it in the event log as a `health` event, and says its end once with how long
it lasted; the status line shows it while it lasts. The faults come from a CameraWatch fed real street frames."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from bot.backends.faults.watch import CameraWatch
from bot.config import Settings
from bot.monitoring.events_log import EventLog
from bot.monitoring.monitor import Monitor
from bot.pipelines.status import status_line
from tests.bot.monitor_helpers import Clock, FakePipelines, make_router, result
from tests.fixtures import faulty

CHECK = 10.0  # the scheduler's health tick


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rig(tmp_path: Path, settings: Settings, clock: Clock):
    events = EventLog(tmp_path / ".state" / "events.jsonl")
    router, sink = make_router(tmp_path, clock, cooldown=300, events=events)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, None, clock=clock, stall_seconds=30)
    return monitor, pipes, sink, events


class Camera:
    """A camera at `fps` whose frames go to a CameraWatch; its handle in FakePipelines carries the watch's faults."""

    def __init__(self, pipes: FakePipelines, clock: Clock, name: str, fps: float = 5) -> None:
        self.pipes, self.clock, self.name, self.fps = pipes, clock, name, fps
        self.watch = CameraWatch(True, clock=clock)
        pipes.add(name, started_at=clock(), fps=fps)


async def _run(camera: Camera, monitor: Monitor, seconds: float, frames: list[np.ndarray] | None) -> None:
    """`seconds` of the camera: frames (cycled) or none (video lost), with a health check every CHECK s."""
    end, next_check, i = camera.clock() + seconds, camera.clock() + CHECK, 0
    while camera.clock() < end:
        if frames:
            camera.watch.arrived()
            camera.watch.saw(frames[i % len(frames)])
            camera.pipes.push(camera.name, result())
            i += 1
        camera.clock.advance(1 / camera.fps)
        if camera.clock() >= next_check:
            camera.pipes.set(camera.name, faults=camera.watch.faults())
            await monitor.check_health()
            next_check += CHECK


@pytest.fixture(scope="module")
def street() -> list[np.ndarray]:
    return faulty.live(faulty.street(), 118)


async def test_video_lost_is_said_once_and_its_end_once_with_how_long(rig, clock: Clock, street) -> None:
    monitor, pipes, sink, events = rig
    monitor.start()
    cam = Camera(pipes, clock, "gate")
    await _run(cam, monitor, 30, street)
    await _run(cam, monitor, 133, None)  # away for 2 min 13 s: thirteen checks see it
    await _run(cam, monitor, 30, street)
    said = [(a.rule, a.text) for a in sink.alerts]
    assert [r for r, _ in said] == ["video_lost", "video_back"]  # no `stalled`, no `low_fps` beside it
    assert said[0][1].startswith("gate: no video for ") and "reconnects by itself" in said[0][1]
    assert said[1][1] in {"gate: video back after 2 min 13 s.", "gate: video back after 2 min 14 s."}
    logged = [json.loads(line) for line in events.path.read_text().splitlines()]
    assert [(e["rule"], e["event_type"]) for e in logged] == [("video_lost", "health"), ("video_back", "health")]


async def test_a_frozen_then_black_camera_says_each_once_however_many_checks(rig, clock: Clock, street) -> None:
    monitor, pipes, sink, _ = rig
    monitor.start()
    cam = Camera(pipes, clock, "yard", fps=4)
    rng = np.random.default_rng(5)
    await _run(cam, monitor, 20, street)
    await _run(cam, monitor, 95, [street[40]])  # frozen for 95 s
    await _run(cam, monitor, 20, street)
    await _run(cam, monitor, 300, faulty.black(street[0].shape, 50, rng))  # black for 5 min
    await _run(cam, monitor, 20, street)
    rules = [a.rule for a in sink.alerts]
    assert rules == ["picture_frozen", "picture_moving", "picture_black", "picture_back"]
    texts = [a.text for a in sink.alerts]
    assert texts[0] == "yard: the picture is frozen: the camera or its encoder hung: restart the camera."
    assert re.fullmatch(r"yard: the picture moves again after 1 min (2[5-9]|3\d) s\.", texts[1])  # 95 s, give or take
    assert re.fullmatch(r"yard: the picture is back after (4 min 5[5-9] s|5 min|5 min [1-5] s)\.", texts[3])


async def test_a_fault_that_began_and_ended_between_two_checks_is_said_once(rig, clock: Clock, street) -> None:
    monitor, pipes, sink, _ = rig
    monitor.start()
    cam = Camera(pipes, clock, "door")
    await _run(cam, monitor, 21, street)  # checks at 10 and 20 s; frames stop at 21 s
    cam.clock.advance(8.5)  # no frame for 8.5 s: a video loss, over before the check at 30 s saw it
    await _run(cam, monitor, 20, street)
    assert [(a.rule, a.text) for a in sink.alerts] == [("video_back", "door: video back after 9 s.")]


async def test_the_status_line_shows_the_fault_and_no_stale_fps(rig, clock: Clock, street) -> None:
    _, pipes, _, _ = rig
    cam = Camera(pipes, clock, "lobby")
    for frame in street[:50]:
        cam.watch.arrived()
        cam.watch.saw(frame)
        clock.advance(0.2)
    clock.advance(42)
    cam.watch.link.tries, cam.watch.link.failed = 3, 2
    cam.watch.link.tried(False, "Connection refused")
    pipes.set("lobby", faults=cam.watch.faults(), fps=0.0)
    line = status_line(pipes.handles["p_lobby"])
    assert line.startswith("lobby (id p_lobby): reconnecting, 0 frames, 0.0 fps")
    assert line.endswith("; camera: no video for 42 s (reconnecting, try 3: connection refused)")


def test_no_low_fps_note_while_the_last_minute_still_counts_a_video_loss(clock: Clock) -> None:
    """After the video is back, the last minute's rate still counts the gap: not a slow pipeline for that minute."""
    from bot.backends.faults.kinds import Fault
    from bot.backends.pace import WINDOW
    from bot.monitoring.health import PipelineHealth

    pipes = FakePipelines()
    health = PipelineHealth(None, stall_seconds=30, min_fps=0.5)
    lost = Fault("video", clock() - 40, "no video for 40 s", ended=clock())
    h = pipes.add("gate", started_at=clock() - 600, fps=0.3, faults=(lost,))
    health.result_at(h.pipeline_id, clock())
    assert [r for r, _ in health.new_problems(h, clock() + WINDOW / 2)] == ["video_back"]
    health.result_at(h.pipeline_id, clock() + WINDOW)  # results still come, slowly
    assert [r for r, _ in health.new_problems(h, clock() + WINDOW + 1)] == ["low_fps"]  # a minute on: it is slow
