"""The motion gate on real footage: a quiet street costs a fraction (the detector is skipped on frames where nothing
moved), yet the person who walks in is found and alerted on, and every frame is still delivered."""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from bot.backends.base import InferenceResult, PipelineHandle, WorkflowRef
from bot.backends.builtin.motion_gate import MotionGate, moved, shrink
from bot.backends.shared import inline_spec
from bot.backends.workflows import detection_workflow
from bot.config import Settings
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.pipelines.request import StartRequest
from tests.bot.backends.test_real_footage import DATA
from tests.bot.monitor_helpers import make_router, run_to_end

LEAD = 40  # frames (8 s at 5 fps) of the empty street before the people of crossing.mp4 walk in


def _frames(video: Path) -> list[np.ndarray]:
    cap, out = cv2.VideoCapture(str(video)), []
    while True:
        ok, frame = cap.read()
        if not ok:
            return out
        out.append(frame)


def quiet_then_crossing(path: Path) -> tuple[Path, int]:
    """crossing.mp4 (vtest.avi, three men walk across) after LEAD frames of the same street empty: the median of its
    frames (people move, the street does not), with a camera's sensor noise. Returns (path, frames written)."""
    crossing = _frames(DATA / "crossing.mp4")
    empty = np.median(np.stack(crossing), axis=0).astype(np.int16)
    rng = np.random.default_rng(0)
    height, width = empty.shape[:2]
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 5.0, (width, height))
    for _ in range(LEAD):
        out.write(np.clip(empty + rng.normal(0, 2, empty.shape), 0, 255).astype(np.uint8))
    for frame in crossing:
        out.write(frame)
    out.release()
    return path, LEAD + len(crossing)


def test_noise_is_not_motion_and_a_passer_by_is():
    crossing = _frames(DATA / "crossing.mp4")
    still = crossing[0].astype(np.int16)
    noisy = np.clip(still + np.random.default_rng(1).normal(0, 2, still.shape), 0, 255).astype(np.uint8)
    assert not moved(shrink(crossing[0]), shrink(noisy))
    assert moved(shrink(crossing[0]), shrink(crossing[3]))  # people walked 0.6 s further


def test_a_hold_skips_frames_that_moved_until_it_has_passed():
    """A resting camera's gate (builtin/light.py): frames that moved are skipped too, for `hold` seconds of video."""
    crossing = _frames(DATA / "crossing.mp4")
    gate = MotionGate()
    assert not gate.still(crossing[0], 0.0, hold=1.0)  # nothing to repeat yet: it runs
    gate.last = "found at 0 s"
    assert gate.still(crossing[3], 0.6, hold=1.0)  # people walked on, yet under the hold: repeated
    assert not gate.still(crossing[5], 1.0, hold=1.0)  # the hold has passed: it looks
    assert not gate.still(crossing[8], 1.6, hold=0.0)  # without a hold a frame that moved always runs


def test_the_setting_off_turns_the_gate_off_in_every_builtin_detector_step_that_does_not_say():
    spec, _ = inline_spec(WorkflowRef(model_id="builtin/faces"), video=True, motion_gate=False)
    assert spec is not None and spec["steps"][0]["motion_gate"] is False
    mine = detection_workflow("builtin/people", settings={"motion_gate": True})
    spec, _ = inline_spec(WorkflowRef(workflow_spec=mine), video=True, motion_gate=False)
    assert spec is not None and spec["steps"][0]["motion_gate"] is True  # the step's own word stands
    spec, _ = inline_spec(WorkflowRef(model_id="builtin/motion"), video=True)
    assert spec is not None and "motion_gate" not in spec["steps"][0]  # on: the blocks' default


def _run_street(settings: Settings, direct_backend, tmp_path: Path):
    from bot.pipelines.manager import PipelineManager

    router, sink = make_router(tmp_path, time.time, cooldown=300)
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", settings)
    monitor = Monitor(router, mgr, settings)
    monitor.add_rule(Rule("class_appears", "quiet", class_name="person"))
    results: list[InferenceResult] = []

    def keep(_: PipelineHandle, r: InferenceResult) -> None:
        results.append(r)

    mgr.add_result_listener(keep)
    return mgr, monitor, sink, results


@pytest.mark.slow
async def test_a_quiet_street_skips_the_detector_yet_the_man_walking_in_raises_the_alert_and_no_frame_is_lost(
    direct_backend, tmp_path: Path, settings: Settings
) -> None:
    video, written = quiet_then_crossing(tmp_path / "quiet.mp4")
    delivered: dict[bool, int] = {}
    for gate in (True, False):
        mgr, monitor, sink, results = _run_street(settings, direct_backend, tmp_path / str(gate))
        monitor.start()
        skipped = MotionGate.skipped
        spec = detection_workflow("builtin/people", settings={"motion_gate": gate})
        try:
            await mgr.start(StartRequest(str(video), "quiet", workflow_spec=spec))
            await run_to_end(mgr, "quiet")
            await monitor.flush()
        finally:
            await mgr.stop_all()
        delivered[gate] = len(results)
        first = next(i for i, r in enumerate(results) if r.counts().get("person"))
        assert first >= LEAD - 1, "nobody is in the empty street"
        assert first <= LEAD + 5, "the men walking in are found within a second"
        [alert] = [a for a in sink.alerts if a.rule == "class_appears:person"]
        assert alert.camera == "quiet" and alert.frame and alert.frame.startswith(b"\xff\xd8")
        if gate:
            assert MotionGate.skipped - skipped >= LEAD // 2  # most of the quiet lead-in skipped the detector
        else:
            assert MotionGate.skipped == skipped
    assert delivered[True] == delivered[False] == written  # every frame delivered, gate or not
