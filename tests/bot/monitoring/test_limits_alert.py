"""A camera outside what the bot counts reliably gets one health alert saying why and what to do, once."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from bot.monitoring.events_log import event_type_of
from bot.monitoring.monitor import Monitor
from tests.bot.monitor_helpers import Clock, FakePipelines, make_router, result


async def test_people_too_small_raise_one_cannot_count_alert_and_a_fine_camera_none(tmp_path: Path,
                                                                                   settings: Settings) -> None:
    clock = Clock()
    router, sink = make_router(tmp_path, clock, cooldown=60)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, None, clock=clock, stall_seconds=30)
    monitor.start()
    measured = {"settled": True, "smallest_px": 24.0, "blind_seconds": 0.0}
    for name, px in (("far", 16.0), ("near", 70.0)):
        pipes.add(name, started_at=clock())
        pipes.push(name, result(camera={**measured, "person_px": px}))
    pipes.add("starting", status="starting")  # nothing measured, nothing said
    await monitor.check_health()
    await monitor.check_health()  # said once, on the way in
    assert [(a.camera, a.rule) for a in sink.alerts] == [("far", "cannot_count")]
    assert "cannot count reliably: people here are about 16 px" in sink.alerts[0].text
    assert "main stream" in sink.alerts[0].text and event_type_of("cannot_count") == "health"
