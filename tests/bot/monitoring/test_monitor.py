"""Tier 1: rule events from results, cooldown/dedupe, mutes, health, persistence, concurrent pipelines."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bot.config import Settings
from bot.monitoring.events_log import EventLog
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.pipelines.request import StartRequest
from tests.bot.monitor_helpers import (
    JPEG,
    Clock,
    FakePipelines,
    RecordingSink,
    dwell_result,
    make_router,
    result,
    run_to_end,
)
from workspace.memory import MemoryStore


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rig(tmp_path: Path, settings: Settings, clock: Clock):
    router, sink = make_router(tmp_path, clock, cooldown=60)
    pipelines = FakePipelines()
    memory = MemoryStore(tmp_path, clock=clock, use_embeddings=False)
    monitor = Monitor(router, pipelines, settings, memory, clock=clock, stall_seconds=30)
    return monitor, pipelines, sink, memory, router


async def test_line_crossing_alerts_once_with_frame_and_cooldown_holds_the_second(rig, clock: Clock) -> None:
    monitor, pipes, sink, memory, _ = rig
    monitor.start()
    pipes.add("door", started_at=clock())
    pipes.push("door", result(count_in=0))  # baseline: no crossing yet
    pipes.push("door", result(faces=1, count_in=1))
    clock.advance(5)
    pipes.push("door", result(faces=1, count_in=2))  # inside the 300 s monitoring cooldown
    await monitor.flush()

    assert len(sink.alerts) == 1
    alert, channel = sink.received[0]
    assert (alert.camera, alert.rule, channel) == ("door", "line_crossed", "C_ALERTS")
    assert alert.frame == JPEG and alert.counts["count_in"] == 1 and "in +1" in alert.text
    assert "ALERT line_crossed: line crossed (in +1" in memory.get_daily_observations(camera="door")

    clock.advance(400)  # after the cooldown the next crossing goes out and says what it summed up
    pipes.push("door", result(count_in=3))
    await monitor.flush()
    assert len(sink.alerts) == 2 and "+1 crossed since the last alert: in 1 / out 0" in sink.alerts[1].text


async def test_muted_camera_posts_nothing_but_is_logged(rig) -> None:
    monitor, pipes, sink, memory, router = rig
    monitor.start()
    router.mute("door", 3600)
    pipes.add("door")
    pipes.push("door", result(count_in=0))
    pipes.push("door", result(count_in=1))
    await monitor.flush()

    assert sink.alerts == []
    assert "(not posted: muted)" in memory.get_daily_observations(camera="door")


async def test_class_appearing_is_edge_triggered_not_per_frame(rig, clock: Clock) -> None:
    monitor, pipes, sink, _, _ = rig
    monitor.start()
    pipes.add("lobby")
    for _ in range(10):  # one visitor standing there for ten frames
        pipes.push("lobby", result(faces=1))
        clock.advance(0.5)
    pipes.push("lobby", result(faces=0))
    clock.advance(1)
    pipes.push("lobby", result(faces=1))  # a one-frame miss is detector flicker, not a new arrival
    await monitor.flush()
    assert [a.rule for a in sink.alerts] == ["class_appears:*"]

    clock.advance(400)
    pipes.push("lobby", result(faces=0))  # gone for longer than clear_seconds, past the cooldown
    clock.advance(1)
    pipes.push("lobby", result(faces=2))
    await monitor.flush()
    assert len(sink.alerts) == 2 and sink.alerts[1].text == "face appeared (2 faces in view)"


async def test_configured_rules_replace_defaults_and_persist(
    rig, tmp_path: Path, settings: Settings, clock: Clock
) -> None:
    monitor, pipes, sink, _, router = rig
    monitor.add_rule(Rule("count_over", camera="lobby", class_name="face", threshold=2, cooldown_seconds=0))
    monitor.start()
    pipes.add("lobby")
    pipes.push("lobby", result(faces=1))  # would fire the default class_appears rule
    pipes.push("lobby", result(faces=3))
    await monitor.flush()
    assert [a.rule for a in sink.alerts] == ["count_over:face>2"]
    assert sink.alerts[0].text == "3 faces in view, over 2"

    reopened = Monitor(router, FakePipelines(), settings, None, clock=clock)
    assert [r.id for r in reopened.rules("lobby")] == ["count_over:face>2"]
    assert reopened.remove_rule("count_over:face>2", camera="lobby")
    assert Monitor(router, FakePipelines(), settings, None, clock=clock).rules() == []


async def test_time_in_zone_names_the_object_and_its_seconds_never_its_tracker_id(rig, clock: Clock) -> None:
    monitor, pipes, sink, _, _ = rig
    monitor.add_rule(Rule("time_in_zone", camera="dock", threshold=30, cooldown_seconds=0))
    monitor.start()
    pipes.add("dock")
    for secs in (12.0, 31.5, 40.0):  # tracker id 45 is larger than the threshold: it must not count as seconds
        pipes.push("dock", dwell_result(("person", 45, secs), ("person", 7, 0.0)))
        clock.advance(1)
    pipes.push("dock", dwell_result(("person", 45, 41.0), ("person", 7, 33.0)))  # a second object passes 30 s
    await monitor.flush()
    assert [a.text for a in sink.alerts] == [
        "person #45 in the zone for 32 s, over 30 s",
        "person #7 in the zone for 33 s, over 30 s",
    ]
    assert sink.alerts[0].rule == "time_in_zone>30s" and sink.alerts[0].camera == "dock"


async def test_an_object_that_left_the_zone_and_came_back_fires_again(rig, clock: Clock) -> None:
    monitor, pipes, sink, _, _ = rig
    monitor.add_rule(Rule("time_in_zone", camera="dock", threshold=5, cooldown_seconds=0))
    monitor.start()
    pipes.add("dock")
    for secs in (6.0, 7.0, 0.0, 3.0, 6.5):  # 0.0: outside the zone (the block resets its time)
        pipes.push("dock", dwell_result(("car", 3, secs)))
        clock.advance(1)
    await monitor.flush()
    assert [a.text for a in sink.alerts] == ["car #3 in the zone for 6 s, over 5 s"] * 2


async def test_health_error_stall_and_drop_alert_once_each(rig, clock: Clock) -> None:
    monitor, pipes, sink, _, _ = rig
    monitor.start()
    pipes.add("cam1", started_at=clock())
    pipes.add("cam2", status="error", error="RTSP 401 Unauthorized")
    pipes.add("cam3", status="finished", video="rtsp://10.0.0.3/live")
    pipes.add("clip", status="finished", video="/videos/clip.mp4")  # a file ending is not a dropped source
    pipes.add("cam4", started_at=clock() - 100, fps=0.2)
    pipes.push("cam1", result())
    pipes.push("cam4", result())

    await monitor.check_health()
    await monitor.check_health()
    assert sorted((a.camera, a.rule) for a in sink.alerts) == [
        ("cam2", "pipeline_error"),
        ("cam3", "source_dropped"),
        ("cam4", "low_fps"),
    ]
    assert "RTSP 401 Unauthorized" in next(a.text for a in sink.alerts if a.camera == "cam2")

    clock.advance(45)  # cam1 has sent nothing for 45 s
    await monitor.check_health()
    await monitor.check_health()
    stalled = [a for a in sink.alerts if a.rule == "stalled"]
    assert sorted(a.camera for a in stalled) == ["cam1", "cam4"]
    assert all(a.frame == JPEG for a in stalled)


async def test_a_move_to_another_inference_server_is_one_health_alert_per_move(
    tmp_path: Path, settings: Settings, clock: Clock
) -> None:
    """A pipeline restarted on another server (HostedPipeline.failover) is said once where the camera's alerts go,
    recorded as a health event; a later move is said again, a check in between says nothing."""
    events = EventLog(tmp_path / "events.jsonl")
    router, sink = make_router(tmp_path, clock, cooldown=60, events=events)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, clock=clock, stall_seconds=30)
    monitor.start()
    pipes.add("door", started_at=clock(), server=":9001")
    pipes.push("door", result())
    await monitor.check_health()
    assert sink.alerts == []
    moved = "restarted on :9002 at 14:03 UTC (:9001 stopped answering), counts carry on"
    pipes.set("door", server=":9002", failover=moved)
    for _ in range(3):
        pipes.push("door", result())
        await monitor.check_health()
    assert [(a.camera, a.rule, a.text) for a in sink.alerts] == [("door", "server_failover", f"pipeline door {moved}.")]
    clock.advance(3600)  # past the cooldown: the next move is said too
    pipes.set("door", server=":9001", failover=moved.replace(":9002", ":9003").replace("14:03", "15:03"))
    pipes.push("door", result())
    await monitor.check_health()
    await monitor.check_health()
    assert [a.rule for a in sink.alerts] == ["server_failover"] * 2 and ":9003 at 15:03" in sink.alerts[1].text
    assert [e["rule"] for e in events.query(event_type="health")] == ["server_failover"] * 2


async def test_results_from_many_pipeline_threads_each_alert_once(rig) -> None:
    monitor, pipes, sink, memory, _ = rig
    monitor.start()
    for n in range(4):
        pipes.add(f"cam{n}")

    def feed(name: str) -> None:
        pipes.push(name, result(count_in=0))
        for i in range(1, 50):
            pipes.push(name, result(count_in=i))

    threads = [threading.Thread(target=feed, args=(f"cam{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    await monitor.flush()

    assert sorted(a.camera for a in sink.alerts) == ["cam0", "cam1", "cam2", "cam3"]
    assert {e.camera for e in monitor.news.take()} == {"cam0", "cam1", "cam2", "cam3"}
    assert monitor.news.take() == []  # handed to the heartbeat once
    assert len(memory.observations_by_camera()) == 4


def back_and_forth_video(path: Path, frames: int = 90, size: tuple[int, int] = (640, 480)) -> Path:
    """One real face crossing the middle line left→right, pausing, then crossing back: two crossings."""
    import cv2
    import numpy as np

    from tests.fixtures.inference import FACE_BOX, astronaut_bgr

    x1, y1, x2, y2 = FACE_BOX
    face = astronaut_bgr()[y1:y2, x1:x2]
    fh, fw = face.shape[:2]
    w, h = size
    background = np.clip(np.random.default_rng(3).normal(110, 6, (h, w, 3)), 0, 255).astype(np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 15, (w, h))
    span = w - fw - 20
    for i in range(frames):
        t = i / (frames - 1)
        pos = 2 * t if t < 0.5 else 2 * (1 - t)  # 0 → 1 → 0: right, then back left
        frame = background.copy()
        x = 10 + int(pos * span)
        frame[h // 2 - fh // 2 : h // 2 - fh // 2 + fh, x : x + fw] = face
        writer.write(frame)
    writer.release()
    return path


@pytest.mark.slow
@pytest.mark.parametrize("muted", [False, True], ids=["routed", "muted"])
async def test_real_pipeline_face_crossing_alerts_once_and_muted_camera_never(
    muted: bool, direct_backend, tmp_path: Path, settings: Settings
) -> None:
    from bot.backends.workflows import detection_workflow
    from bot.pipelines.manager import PipelineManager
    from tests.fixtures.inference import crossing_line

    router, sink = make_router(tmp_path, time.time, cooldown=300)
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", settings)
    memory = MemoryStore(tmp_path, use_embeddings=False)
    monitor = Monitor(router, mgr, settings, memory)
    monitor.start()
    if muted:
        router.mute("door", 3600)
    video = back_and_forth_video(tmp_path / "door.mp4")
    crossings: list[dict] = []
    mgr.add_result_listener(lambda h, r: crossings.append(dict(r.values)) if r.values.get("count_in") else None)
    try:
        await mgr.start(StartRequest(str(video), "door", workflow_spec=detection_workflow("builtin/faces", line=crossing_line())))
        await run_to_end(mgr, "door")
        await monitor.flush()
    finally:
        await mgr.stop_all()
    last = crossings[-1] if crossings else {}
    assert (last.get("count_in"), last.get("count_out")) == (1, 1), "the video must show two crossings"
    line_alerts = [a for a in sink.alerts if a.rule == "line_crossed"]
    if muted:
        assert line_alerts == []
        assert "(not posted: muted)" in memory.get_daily_observations(camera="door")
    else:
        [alert] = line_alerts  # the way back is inside the cooldown
        assert alert.camera == "door" and "in +1" in alert.text
        assert alert.frame and alert.frame.startswith(b"\xff\xd8\xff")
        assert sink.received[0][1] == "C_ALERTS"


async def test_a_rules_own_cooldown_shorter_than_the_global_one_works_as_wired_by_the_runtime(
    settings: Settings, clock: Clock
) -> None:
    """`/vision rule door line cooldown=60` with the 300 s global default: crossings at 0, 70, 140 s → 3 alerts.

    Before there was one cooldown, the monitor applied the rule's 60 s and the router the global 300 s again.
    """
    from bot.commands.dispatch import run_command
    from bot.runtime import Runtime

    assert settings.monitoring.alert_cooldown_seconds == 300
    async with Runtime(settings, background=False, clock=clock) as rt:
        (rt.workspace.root / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| door | rtsp://10.0.0.5/s1 |\n")
        sink = RecordingSink()
        rt.router.add_sink(sink)
        rt.monitor.start()
        reply = await run_command("rule door line cooldown=60", rt.command_context())
        assert reply.ok, reply.text
        pipes = FakePipelines()
        pipes.listeners.append(rt.monitor.on_result)
        pipes.add("door", started_at=clock())
        pipes.push("door", result(count_in=0))
        for n, at in enumerate((0, 70, 140), start=1):
            clock.now = 1_772_000_000.0 + at
            pipes.push("door", result(faces=1, count_in=n))
            await rt.monitor.flush()
        clock.advance(10)  # inside the rule's 60 s: held
        pipes.push("door", result(faces=1, count_in=4))
        await rt.monitor.flush()
    assert [a.rule for a in sink.alerts] == ["line_crossed"] * 3
