"""HttpBackend against the real local inference server (`vision-agent inference-server`, started once per session)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import cv2
import numpy as np
import pytest

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.http.backend import HttpBackend
from bot.backends.workflows import detection_workflow
from bot.config import load_settings
from tests.fixtures.common import free_port
from tests.fixtures.inference import crossing_line, make_video

pytestmark = pytest.mark.slow


@pytest.fixture
async def http_backend(inference_server, base_env):
    backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": inference_server}))
    yield backend
    await backend.close()  # terminates its hosted pipelines on the server


async def test_astronaut_face_through_server_with_annotated_frame(http_backend, astronaut_jpeg):
    result = await http_backend.run_single(astronaut_jpeg, model_id="builtin/faces")
    assert result.counts() == {"face": 1}
    x1, y1, x2, y2 = result.detections[0].xyxy
    assert 150 < x1 < 200 and 40 < y1 < 90 and 250 < x2 < 300 and 140 < y2 < 190
    frame = cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)
    original = cv2.imdecode(np.frombuffer(astronaut_jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert frame.shape == original.shape and result.image_size == (512, 512)
    edge = np.abs(frame[66:160, 176:179].astype(int) - original[66:160, 176:179].astype(int)).mean()
    assert edge > 20  # the workflow's bounding box visualization came back as the frame


async def test_invalid_spec_comes_back_as_problems_and_corrected_one_runs(http_backend, astronaut_jpeg):
    spec = detection_workflow("builtin/faces", track=False)
    spec["steps"][0]["images"] = "$inputs.picture"
    problems = await http_backend.validate_workflow(spec)
    assert any("picture" in p for p in problems) and all(len(p) < 400 for p in problems)
    spec["steps"].append({"type": "roboflow_core/no_such_block@v9", "name": "ghost"})
    problems = await http_backend.validate_workflow(spec)  # refused by the block policy before the server sees it
    assert len(problems) == 1 and "no_such_block" in problems[0] and "list_workflow_blocks" in problems[0]
    fixed = detection_workflow("builtin/faces", track=False)
    assert await http_backend.validate_workflow(fixed) == []
    result = await http_backend.run_single(astronaut_jpeg, workflow_spec=fixed)
    assert result.counts() == {"face": 1}


async def test_describe_blocks_lists_the_offline_detectors(http_backend):
    types = {b["manifest_type_identifier"] for b in await http_backend.describe_blocks()}
    assert {"vision_agent/haar_face_detector@v1", "vision_agent/motion_detector@v1",
            "vision_agent/line_counter@v1"} <= types
    assert "roboflow_core/line_counter@v2" in types


async def test_custom_python_refused_before_reaching_the_server(http_backend, astronaut_jpeg):
    spec = detection_workflow("builtin/faces", track=False)
    spec["dynamic_blocks_definitions"] = [{"manifest": {"type": "ManifestDescription", "block_type": "evil"}}]
    with pytest.raises(BackendError, match="allow_custom_python"):
        await http_backend.run_single(astronaut_jpeg, workflow_spec=spec)
    assert any("allow_custom_python" in p for p in await http_backend.validate_workflow(spec))


async def test_roboflow_model_offline_fails_fast(http_backend, astronaut_jpeg):
    start = time.monotonic()
    with pytest.raises(BackendError, match="could not reach Roboflow to load model coco/3"):
        await http_backend.run_single(astronaut_jpeg, model_id="coco/3")
    assert time.monotonic() - start < 20  # fast: no minute of retries against an unreachable host


async def test_unreachable_server_says_how_to_start_it(base_env, astronaut_jpeg):
    backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": f"http://127.0.0.1:{free_port()}"}))
    with pytest.raises(BackendError, match="vision-agent inference-server"):
        await backend.run_single(astronaut_jpeg, model_id="builtin/faces")


async def test_hosted_pipeline_counts_one_in_one_out(http_backend, tmp_path):
    # The server ends a file pipeline once the file is decoded, dropping the ~64 buffered frames still to be
    # processed: the faces cross early and then stand still for 80 frames of that tail.
    video = make_video(tmp_path / "cross.mp4", frames=24, hold=80)
    seen = []
    spec = detection_workflow("builtin/faces", line=crossing_line())
    handle = await http_backend.start_pipeline(
        "hosted-1", "door", str(video), WorkflowRef(workflow_spec=spec), max_fps=15, on_result=lambda h, r: seen.append(r)
    )
    assert handle.backend == "http" and handle.status == "running"
    deadline = time.monotonic() + 60
    while (await http_backend.get_pipeline_status("hosted-1")).status == "running" and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    handle = await http_backend.get_pipeline_status("hosted-1")
    assert handle.status == "finished" and handle.frames >= 16, handle
    latest = http_backend.latest_result("hosted-1")
    assert latest.values["count_in"] == 1 and latest.values["count_out"] == 1
    assert {d.tracker_id for d in latest.detections} == {1, 2} and latest.frame[:2] == b"\xff\xd8"
    assert len(seen) == handle.frames
    with pytest.raises(BackendError, match="cannot be paused"):
        await http_backend.start_pipeline("hosted-2", "door", str(video), WorkflowRef(model_id="builtin/faces"))
        await http_backend.pause_pipeline("hosted-2")
    await http_backend.close()
    assert (await http_backend.get_pipeline_status("hosted-2")).status in ("stopped", "finished")


async def test_hosted_pipeline_on_missing_file_is_error(http_backend, tmp_path):
    handle = await http_backend.start_pipeline("hosted-miss", "gone", str(tmp_path / "nope.mp4"), WorkflowRef(model_id="builtin/faces"))
    assert handle.status == "error" and "not found" in handle.error


async def test_close_twice_ends_the_server_pipeline_once(http_backend, tmp_path, caplog):
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=400)
    await http_backend.start_pipeline("twice-1", "door", str(video), WorkflowRef(model_id="builtin/faces"), max_fps=10)
    server_id = http_backend.server_id("twice-1")
    assert server_id in await http_backend.server_pipelines()
    await http_backend.close()
    assert server_id not in await http_backend.server_pipelines()
    assert (await http_backend.get_pipeline_status("twice-1")).status == "stopped"
    assert not [t for t in threading.enumerate() if t.name == "hosted-twice-1"]  # the poller ended
    http_backend.url = f"http://127.0.0.1:{free_port()}"  # any call to the server from now on would fail and log
    with caplog.at_level(logging.DEBUG, logger="bot.backends"):
        await http_backend.close()  # Runtime.close after PipelineManager.close
    assert caplog.records == [] and (await http_backend.get_pipeline_status("twice-1")).status == "stopped"


async def _decoder_depth(backend: HttpBackend, server_id: str) -> int:
    """The decoded-frame queue size the server's pipeline process reports it holds (its watchdog's source report)."""
    deadline = time.monotonic() + 60
    while True:
        status, body = await asyncio.to_thread(backend._request, "GET", f"/inference_pipelines/{server_id}/status")
        sources = (body.get("report") or {}).get("sources_metadata") if status == 200 else None
        if sources:
            return int(sources[0]["buffer_size"])
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.5)


async def test_server_pipelines_queue_frames_within_the_frame_budget(http_backend, tmp_path):
    video = make_video(tmp_path / "vga.mp4", frames=400)  # 640x480: a few frames fit the default 8 MB budget
    await http_backend.start_pipeline("budget-1", "door", str(video), WorkflowRef(model_id="builtin/faces"), max_fps=5)
    ours = await _decoder_depth(http_backend, http_backend.server_id("budget-1") or "")
    budget = http_backend._settings.monitoring.frame_buffer_bytes
    assert 1 < ours < 64 and ours * 3 * 640 * 480 * 3 <= budget  # inference's own default queued 64 frames


async def test_a_full_hd_file_pipeline_still_ends_when_asked(http_backend, tmp_path):
    # The budget fits less than one 1080p frame per queue; with one-frame queues the server never answered the
    # terminate request of a file pipeline (inference 1.8.3).
    video = make_video(tmp_path / "hd.mp4", size=(1920, 1080), frames=90)
    await http_backend.start_pipeline("hd-1", "door", str(video), WorkflowRef(model_id="builtin/faces"), max_fps=5)
    server_id = http_backend.server_id("hd-1") or ""
    assert 1 < await _decoder_depth(http_backend, server_id) < 64
    status, _ = await asyncio.to_thread(http_backend._request, "POST", f"/inference_pipelines/{server_id}/terminate",
                                        timeout=45)
    assert status == 200
