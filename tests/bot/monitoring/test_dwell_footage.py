"""Dwell on real CCTV footage: the street clip through the real in-process pipeline, zone rule, alert and day's log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import Settings
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.pipelines.request import StartRequest
from tests.bot.monitor_helpers import make_router, run_to_end
from workspace.memory import MemoryStore

STREET = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "vtest_street_60f.mp4"  # 6 s at 10 fps
PAVEMENT = [[0, 100], [384, 100], [384, 288], [0, 288]]  # the lower part of the 384×288 frame, where people walk


@pytest.mark.slow
async def test_someone_lingering_in_the_zone_on_real_footage_alerts_with_who_and_how_long(
    direct_backend, tmp_path: Path, settings: Settings
) -> None:
    import time

    from bot.backends.workflows import detection_workflow
    from bot.pipelines.manager import PipelineManager

    router, sink = make_router(tmp_path, time.time, cooldown=300)
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", settings)
    memory = MemoryStore(tmp_path, use_embeddings=False)
    monitor = Monitor(router, mgr, settings, memory)
    monitor.add_rule(Rule("time_in_zone", camera="street", threshold=3))
    monitor.start()
    longest: dict[int, float] = {}
    mgr.add_result_listener(lambda h, r: longest.update(
        {d.tracker_id: max(d.time_in_zone or 0.0, longest.get(d.tracker_id, 0.0)) for d in r.detections}))
    try:
        spec = detection_workflow("builtin/motion", zone=PAVEMENT)
        await mgr.start(StartRequest(str(STREET), "street", workflow_spec=spec))
        await run_to_end(mgr, "street")
        await monitor.flush()
        await monitor.check_health()  # the clip has ended: the timeline writes the stays still open
    finally:
        await mgr.stop_all()

    assert mgr.resolve("street").status == "finished"
    lingerers = {tid: secs for tid, secs in longest.items() if secs > 3}
    assert lingerers, f"someone must stay over 3 s in the zone of the clip; longest stays: {longest}"
    [alert] = [a for a in sink.alerts if a.rule == "time_in_zone>3s"]  # one per object, the cooldown holds others
    m = re.fullmatch(r"moving area #(\d+) in the zone for (\d+) s(?: \(and \d+ more\))?, over 3 s", alert.text)
    assert m, alert.text
    assert int(m[1]) in lingerers and int(m[2]) == 3  # the seconds when it passed 3 s, not its tracker id
    assert alert.camera == "street" and alert.frame and alert.frame.startswith(b"\xff\xd8\xff")
    log = memory.get_daily_observations(camera="street")
    assert f"ALERT time_in_zone>3s: {alert.text}" in log
    tid, secs = max(lingerers.items(), key=lambda kv: kv[1])
    assert f"moving area #{tid} stayed {secs:.0f} s in the zone" in log
