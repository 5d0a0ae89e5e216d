"""A real direct pipeline asked for more frames than it delivers says so in its handle and status line, with the last
minute's rate and the cause: a file played in real time faster than the detector goes (CPU-bound), a loopback MJPEG
camera sending fewer frames than asked (the camera)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from bot.backends.base import PipelineHandle, WorkflowRef
from bot.backends.pace import SHORT
from bot.pipelines.status import status_line
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video
from tests.fixtures.mjpeg import flat_jpeg, mjpeg_camera

SAID = re.compile(r"^(?P<rate>\d+\.\d) of (?P<asked>\d+(?:\.\d+)?) fps: (?P<why>.+)$")


async def _short(backend: Any, pid: str) -> PipelineHandle:
    """The handle once it says it falls short (it runs: a file this long outlasts the wait)."""
    deadline = time.monotonic() + patience(120)
    while not (h := await backend.get_pipeline_status(pid)).short:
        assert h.status in ("starting", "running") and time.monotonic() < deadline, h
        await asyncio.sleep(0.25)
    return h


@pytest.mark.parametrize(("file_fps", "asked"), [(120, 120), (90, 240)])
async def test_a_file_played_faster_than_the_detector_goes_says_it_is_cpu_bound(direct_backend, tmp_path, file_fps,
                                                                                 asked) -> None:
    video = make_video(tmp_path / f"fast{file_fps}.mp4", frames=file_fps * 12, fps=file_fps)
    pid = f"pace-{file_fps}-{asked}"
    await direct_backend.start_pipeline(pid, "fast", str(video), WorkflowRef(model_id="builtin/people"), max_fps=asked)
    try:
        h = await _short(direct_backend, pid)
        said = SAID.match(h.short or "")
        assert said is not None, h.short
        target = min(asked, file_fps)  # fps= above a file's own rate plays it at that rate, in real time
        assert h.asked_fps == target and float(said["asked"]) == target
        assert float(said["rate"]) < SHORT * target and said["why"] == "CPU-bound; lower fps or size"
        assert h.fps is not None and abs(float(said["rate"]) - h.fps) <= 0.5  # the same last-minute rate
        assert status_line(h).endswith(f"; {h.short}")  # in /vision list and status, and REST's summary
    finally:
        await direct_backend.stop_pipeline(pid)


@pytest.mark.parametrize(("camera_fps", "asked"), [(2, 6), (3, 10)])
async def test_a_camera_sending_fewer_frames_than_asked_is_named_as_the_cause(direct_backend, camera_fps,
                                                                               asked) -> None:
    with mjpeg_camera([flat_jpeg(320, 240)], fps=camera_fps) as camera:
        pid = f"pace-cam-{camera_fps}"
        await direct_backend.start_pipeline(pid, "slowcam", camera.url, WorkflowRef(model_id="builtin/motion"),
                                            max_fps=asked)
        try:
            h = await _short(direct_backend, pid)
        finally:
            await direct_backend.stop_pipeline(pid)
    said = SAID.match(h.short or "")
    assert said is not None and float(said["asked"]) == asked, h.short
    sent = re.search(r"the camera sends (\d+\.\d) fps", said["why"])
    assert sent is not None and "CPU" not in said["why"], h.short
    assert abs(float(sent[1]) - camera_fps) <= 0.5 * camera_fps  # what the camera really sends, roughly
