"""A `near` rule on real detections, through the real pipeline and monitor: the builtin face detector on a clip where
two real faces pass each other about 2 face sizes apart, and the builtin people detector on real CCTV footage
(OpenCV's vtest.avi, tests/fixtures/data/crossing.mp4) where three men walk across together."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.backends.base import InferenceResult, PipelineHandle
from bot.config import Settings
from bot.monitoring.kinds.near import closest
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.pipelines.request import StartRequest
from tests.bot.backends.test_real_footage import DATA
from tests.bot.monitor_helpers import make_router, run_to_end


@pytest.mark.slow
@pytest.mark.parametrize(("within", "fires"), [(3.0, True), (1.0, False)], ids=["within-3", "within-1"])
async def test_near_fires_when_two_faces_pass_within_its_gap_and_not_beyond(
    within: float, fires: bool, direct_backend, tmp_path: Path, settings: Settings
) -> None:
    from bot.backends.workflows import detection_workflow
    from bot.pipelines.manager import PipelineManager
    from tests.fixtures.inference import make_video

    router, sink = make_router(tmp_path, time.time, cooldown=300)
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", settings)
    monitor = Monitor(router, mgr, settings)
    monitor.start()
    monitor.add_rule(Rule("near", "faces", class_name="face", other_class="face", threshold=within))
    gaps: list[float] = []

    def measure(_: PipelineHandle, r: InferenceResult) -> None:
        if (g := closest(r, "face", "face")) is not None:
            gaps.append(g)

    mgr.add_result_listener(measure)
    video = make_video(tmp_path / "faces.mp4", frames=45)  # face A along the top, face B along the bottom
    try:
        await mgr.start(StartRequest(str(video), "faces", workflow_spec=detection_workflow("builtin/faces")))
        await run_to_end(mgr, "faces")
        await monitor.flush()
    finally:
        await mgr.stop_all()
    assert gaps and 1.0 < min(gaps) < 3.0, f"the two faces must both be found and pass 1-3 apart: {min(gaps or [0])}"
    near = [a for a in sink.alerts if a.rule == f"near:face+face<={within:g}"]
    if fires:
        [alert] = near  # once, not on every frame they are close
        assert alert.text.startswith("2 faces near each other (") and f"within {within:g})" in alert.text
        assert alert.frame and alert.frame.startswith(b"\xff\xd8\xff")
    else:
        assert near == []


@pytest.mark.slow
async def test_near_fires_once_on_cctv_where_people_walk_together(
    direct_backend, tmp_path: Path, settings: Settings
) -> None:
    from bot.backends.workflows import detection_workflow
    from bot.pipelines.manager import PipelineManager

    router, sink = make_router(tmp_path, time.time, cooldown=300)
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", settings)
    monitor = Monitor(router, mgr, settings)
    monitor.start()
    monitor.add_rule(Rule("near", "street", class_name="person", other_class="person", threshold=0.3))
    gaps: list[float | None] = []
    mgr.add_result_listener(lambda h, r: gaps.append(closest(r, "person", "person")))
    try:
        await mgr.start(StartRequest(str(DATA / "crossing.mp4"), "street",
                                     workflow_spec=detection_workflow("builtin/people")))
        await run_to_end(mgr, "street")
        await monitor.flush()
    finally:
        await mgr.stop_all()
    apart = [g for g in gaps if g is not None]
    assert apart and max(apart) > 1.0 and min(apart) <= 0.3, apart  # two people apart at first, then together
    [alert] = [a for a in sink.alerts if a.rule == "near:person+person<=0.3"]
    assert alert.camera == "street" and alert.text.startswith("2 people near each other (")
