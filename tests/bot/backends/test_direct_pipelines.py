"""DirectBackend pipelines: real InferencePipeline threads on generated face videos."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.workflows import detection_workflow
from tests.fakes.waits import patience
from tests.fixtures.inference import crossing_line, make_video

pytestmark = pytest.mark.slow


async def wait_done(backend, pipeline_id: str, timeout: float = 60.0):
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        handle = await backend.get_pipeline_status(pipeline_id)
        if handle.status in ("finished", "error", "stopped"):
            return handle
        await asyncio.sleep(0.1)
    raise AssertionError(f"pipeline {pipeline_id} still {handle.status} after {timeout}s")


_BEFORE: set[int | None] = set()


@pytest.fixture(autouse=True)
def _threads_before() -> None:
    """Threads alive when a test starts are not its own (an earlier test's pipeline may still be winding down;
    the session's leak check names such tests)."""
    _BEFORE.clear()
    _BEFORE.update(t.ident for t in threading.enumerate())


def pipeline_threads() -> list[str]:
    """This test's pipeline threads still running. A reaper sets its events as its last act, so it may take a
    moment more to exit: it gets one second; the pipeline's own threads get none."""
    mine = [t for t in threading.enumerate() if t.ident not in _BEFORE]
    for t in mine:
        if t.name.startswith("reap-"):
            t.join(1.0)
    names = ("_execute_inference", "_dispatch_inference_results", "reap-")
    return [t.name for t in mine if t.is_alive() and any(n in t.name for n in names)]


async def test_two_faces_crossing_line_count_one_in_one_out(direct_backend, face_video):
    seen = []
    spec = detection_workflow("builtin/faces", line=crossing_line())
    handle = await direct_backend.start_pipeline(
        "cross-1", "door", str(face_video), WorkflowRef(workflow_spec=spec), on_result=lambda h, r: seen.append((h, r))
    )
    assert handle.status in ("running", "finished") and handle.backend == "direct"
    handle = await wait_done(direct_backend, "cross-1")
    assert handle.status == "finished" and handle.frames == 60 and handle.fps and handle.fps > 0
    latest = direct_backend.latest_result("cross-1")
    assert latest.values["count_in"] == 1 and latest.values["count_out"] == 1
    assert latest.counts() == {"face": 2} and {d.tracker_id for d in latest.detections} == {1, 2}
    assert latest.frame[:2] == b"\xff\xd8" and latest.image_size == (640, 480)
    assert len(seen) == 60 and seen[0][0].pipeline_id == "cross-1"
    results = await direct_backend.consume_results("cross-1", max_results=5)
    assert [r.frame_id for r in results] == [56, 57, 58, 59, 60]
    assert await direct_backend.consume_results("cross-1") == []  # consumed
    assert pipeline_threads() == []


async def test_model_id_pipeline_pause_resume_stop(direct_backend, tmp_path):
    video = make_video(tmp_path / "long.mp4", frames=400)
    handle = await direct_backend.start_pipeline("pr-1", "lobby", str(video), WorkflowRef(model_id="builtin/faces"), max_fps=20)
    assert "model builtin/faces" in handle.workflow_description
    await asyncio.sleep(1.0)
    paused = await direct_backend.pause_pipeline("pr-1")
    assert paused.status == "paused"
    frames = -1  # a frame already in inference when the pause came may still land: wait until the count settles
    for _ in range(40):
        before, frames = frames, (await direct_backend.get_pipeline_status("pr-1")).frames
        if frames == before:
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)
    assert (await direct_backend.get_pipeline_status("pr-1")).frames == frames  # nothing new while paused
    assert (await direct_backend.resume_pipeline("pr-1")).status == "running"
    deadline = time.monotonic() + 15
    while (await direct_backend.get_pipeline_status("pr-1")).frames <= frames and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert (await direct_backend.get_pipeline_status("pr-1")).frames > frames
    stopped = await direct_backend.stop_pipeline("pr-1")
    assert stopped.status == "stopped" and stopped.frames < 400
    assert pipeline_threads() == []
    assert [h.pipeline_id for h in await direct_backend.list_pipelines()].count("pr-1") == 1


async def test_missing_file_reports_error_and_leaves_no_thread(direct_backend, tmp_path):
    handle = await direct_backend.start_pipeline("miss-1", "gone", str(tmp_path / "nope.mp4"), WorkflowRef(model_id="builtin/faces"))
    assert handle.status == "error" and "not found" in handle.error and "nope.mp4" in handle.error
    assert pipeline_threads() == []


async def test_unreadable_file_reports_error_and_leaves_no_thread(direct_backend, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"this is not a video")
    handle = await direct_backend.start_pipeline("bad-1", "broken", str(bad), WorkflowRef(model_id="builtin/faces"))
    assert handle.status == "error" and "cannot open video source" in handle.error
    assert pipeline_threads() == []


async def test_credentials_never_appear_in_handles(direct_backend):
    ref = "rtsp://admin:hunter2@127.0.0.1:1/stream"
    handle = await direct_backend.start_pipeline("cam-1", "cam", ref, WorkflowRef(model_id="builtin/faces"))
    assert handle.status == "error"
    assert "hunter2" not in repr(handle) and "admin:***@127.0.0.1" in handle.video_reference
    assert pipeline_threads() == []


async def test_unknown_pipeline_is_a_clear_error(direct_backend):
    with pytest.raises(BackendError, match="no pipeline"):
        await direct_backend.get_pipeline_status("never-started")


async def test_motion_builtin_sees_the_moving_faces(direct_backend, face_video):
    seen = []
    await direct_backend.start_pipeline("motion-1", "m", str(face_video), WorkflowRef(model_id="builtin/motion"),
                                        on_result=lambda h, r: seen.append(r))
    await wait_done(direct_backend, "motion-1")
    first, later = seen[0], seen[10:]
    assert first.detections == ()  # one frame is no motion: the background model is empty
    moving = [r for r in later if r.counts().get("motion")]
    assert len(moving) > len(later) // 2
    assert all(set(r.counts()) <= {"motion"} for r in seen)


async def test_close_twice_stops_each_pipeline_once_and_leaves_no_thread(direct_backend, tmp_path):
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=400)
    await direct_backend.start_pipeline("close-1", "lobby", str(video), WorkflowRef(model_id="builtin/faces"), max_fps=20)
    await direct_backend.close()
    stopped = await direct_backend.get_pipeline_status("close-1")
    assert stopped.status == "stopped" and pipeline_threads() == []
    start = time.monotonic()
    await direct_backend.close()  # Runtime.close after PipelineManager.close: a no-op
    assert time.monotonic() - start < 5.0  # a second real stop would join the pipeline's threads again
    assert await direct_backend.get_pipeline_status("close-1") == stopped and pipeline_threads() == []


async def test_sources_that_fail_at_once_never_strand_a_dispatcher_thread(direct_backend, tmp_path):
    """A source failing instantly ended the inference thread before start() launched the dispatcher; the reaper's
    join() then drained the end marker itself and the dispatcher waited forever (3 of 30 stranded before the fix)."""
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"this is not a video")
    for i in range(30):
        handle = await direct_backend.start_pipeline(f"burst-{i}", "broken", str(bad), WorkflowRef(model_id="builtin/faces"))
        assert handle.status == "error"
    assert pipeline_threads() == []
