"""The tools end to end on the real DirectBackend: the astronaut's face, a crossing video, restart recovery."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bot.agent.tools import ToolContext
from bot.backends.provider import BackendProvider
from bot.backends.workflows import detection_workflow
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest
from bot.pipelines.restore import restore_all
from bot.rights import OPERATOR
from bot.services import Services
from tests.fakes.waits import patience
from tests.fixtures.inference import crossing_line, make_video
from tools import build_registry

pytestmark = pytest.mark.slow


@pytest.fixture
def direct(direct_backend):
    """The session's DirectBackend (tests.fixtures.inference): its runtime costs seconds to build, once."""
    return direct_backend


@pytest.fixture
def reg():
    return build_registry()


@pytest.fixture
def ctx(settings, workspace_dir: Path, direct) -> ToolContext:
    mgr = PipelineManager(lambda: direct, workspace_dir / "active_state.json", settings)
    return ToolContext(settings=settings, services=Services(backend=BackendProvider.of(direct), pipelines=mgr),
                       requester=OPERATOR)  # the person at the terminal: owner of what they start, may stop anything


async def _wait_done(mgr: PipelineManager, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        if (await mgr.list()) and mgr.resolve(name).status not in ("starting", "running"):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name} still {mgr.resolve(name).status} after {timeout}s")


async def test_run_inference_finds_the_astronauts_face(reg, ctx, workspace_dir: Path, astronaut_jpeg: bytes):
    (workspace_dir / "astronaut.jpg").write_bytes(astronaut_jpeg)
    res = await reg.execute("run_inference", {"image": "astronaut.jpg", "model_id": "builtin/faces"}, ctx)
    assert not res.is_error, res.text
    assert "1 detection: 1 face (" in res.text and "(512x512)" in res.text
    assert res.frame and res.frame.startswith(b"\xff\xd8\xff") and res.image == res.frame


async def test_discovery_on_the_real_catalogue(reg, ctx):
    tracking = await reg.execute("list_workflow_blocks", {"category": "tracking"}, ctx)
    assert "roboflow_core/byte_tracker@v3" in tracking.text and len(tracking.text) < 6500
    models = await reg.execute("list_workflow_blocks", {"category": "model"}, ctx)
    assert "vision_agent/haar_face_detector@v1" in models.text
    details = await reg.execute("get_block_details", {"block_type": "roboflow_core/line_counter@v2"}, ctx)
    assert "- line_segment (required)" in details.text and "count_in [integer]" in details.text
    assert '"type": "roboflow_core/line_counter@v2"' in details.text.splitlines()[-1]


async def test_offline_zero_shot_and_vlm_fall_back(reg, ctx, workspace_dir: Path, astronaut_jpeg: bytes):
    (workspace_dir / "a.jpg").write_bytes(astronaut_jpeg)
    zs = await reg.execute("detect_zero_shot", {"image": "a.jpg", "class_names": ["helmet"]}, ctx)
    assert zs.is_error and "builtin/faces" in zs.text
    vlm = await reg.execute("ask_about_image", {"image": "a.jpg", "question": "What is the person wearing?"}, ctx)
    assert not vlm.is_error and vlm.image and "Answer the question from this image yourself" in vlm.text


async def test_pipeline_on_a_video_counts_both_crossings(reg, ctx, workspace_dir: Path):
    video = make_video(workspace_dir / "crossing.mp4")
    bad = detection_workflow("builtin/faces", line=crossing_line())
    bad["steps"][2]["detections"] = "$steps.nowhere.predictions"
    res = await reg.execute("start_pipeline", {"video_reference": "crossing.mp4", "pipeline_name": "door",
                                               "workflow_spec": bad}, ctx)
    assert res.is_error and "nowhere" in res.text  # the model gets the compiler's complaint, nothing deployed
    (workspace_dir / "corrupt.mp4").write_bytes(b"not a video")
    res = await reg.execute("start_pipeline", {"video_reference": "corrupt.mp4", "pipeline_name": "door",
                                               "model_id": "builtin/faces"}, ctx)
    assert res.is_error and "could not start" in res.text
    good = detection_workflow("builtin/faces", line=crossing_line())
    res = await reg.execute("start_pipeline", {"video_reference": str(video), "pipeline_name": "door",
                                               "workflow_spec": good}, ctx)
    assert not res.is_error, res.text
    mgr = ctx.services.pipelines
    await _wait_done(mgr, "door")
    out = await reg.execute("get_pipeline_results", {"pipeline_id": "door", "max_results": 50, "include_frame": True}, ctx)
    assert "face max 2" in out.text and "count_in=1, count_out=1" in out.text, out.text
    assert out.frame and out.frame.startswith(b"\xff\xd8\xff")
    assert "stopped" in (await reg.execute("stop_pipeline", {"pipeline_id": "door"}, ctx)).text


async def test_restart_restores_pipelines_and_marks_a_missing_source(settings, workspace_dir: Path):
    from bot.backends.direct.backend import DirectBackend

    state = workspace_dir / "active_state.json"
    long_video = make_video(workspace_dir / "long.mp4", frames=150)
    gone = make_video(workspace_dir / "gone.mp4", frames=20)
    first = PipelineManager(lambda: DirectBackend(settings), state, settings)
    await first.start(StartRequest(str(long_video), "hall", model_id="builtin/faces", max_fps=10))
    await first.start(StartRequest(str(gone), "yard", model_id="builtin/faces", max_fps=10))
    await first.close()  # a shutdown, not a user stop: both stay in active_state.json
    gone.unlink()

    second = PipelineManager(lambda: DirectBackend(settings), state, settings)
    seen = []
    second.add_result_listener(lambda h, r: seen.append(h.name))
    try:
        restored = {h.name: h for h in await restore_all(second)}
        assert restored["yard"].status == "error" and restored["yard"].error
        assert restored["hall"].status in ("starting", "running")
        deadline = time.monotonic() + 20
        while "hall" not in seen and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert "hall" in seen
        assert {h.name for h in await second.list()} == {"hall", "yard"}
    finally:
        await second.stop_all()
        await second.close()


async def test_a_dead_camera_with_a_password_never_leaks_it(reg, ctx, workspace_dir: Path, caplog):
    import logging

    # registered, so its loopback address may be opened (an unregistered one is refused before any connect)
    (workspace_dir / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| cam | rtsp://admin:hunter2@127.0.0.1:1/live |\n")
    with caplog.at_level(logging.DEBUG):
        res = await reg.execute("start_pipeline", {"video_reference": "rtsp://admin:hunter2@127.0.0.1:1/live",
                                                   "pipeline_name": "cam", "model_id": "builtin/faces"}, ctx)
        listing = await reg.execute("list_pipelines", {}, ctx)
    # a registered camera is named, not shown by its URL (masked or not): any member may read the error
    assert res.is_error and 'camera "cam"' in res.text and "rtsp://" not in res.text
    assert "error" in listing.text
    assert "hunter2" not in res.text + listing.text + caplog.text
