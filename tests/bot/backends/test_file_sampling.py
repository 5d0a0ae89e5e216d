"""`fps=N` on a video file gives what a camera at N fps would: N frames per second of video, in real time, not
every frame in slow motion; at or above the file's own rate, every frame once. Files of rates nobody named."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.backends.base import WorkflowRef
from bot.pipelines.rate import Rate
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video


@pytest.mark.parametrize(("file_fps", "seconds", "fps"), [(25, 4, 5), (7, 6, 5), (12, 4, 3.5), (10, 3, 30)])
async def test_a_file_gives_n_frames_per_second_of_video(direct_backend, tmp_path, file_fps, seconds, fps) -> None:
    video = make_video(tmp_path / f"clip{file_fps}.mp4", frames=file_fps * seconds, fps=file_fps, size=(320, 240))
    pid = f"rate-{file_fps}-{fps}"
    await direct_backend.start_pipeline(pid, "clip", str(video), WorkflowRef(model_id="builtin/motion"), max_fps=fps)
    deadline = time.monotonic() + patience(60)
    while (status := await direct_backend.get_pipeline_status(pid)).status in ("starting", "running"):
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.2)
    assert status.status == "finished", status.error
    expected = min(fps, file_fps) * seconds  # duration x N, never more frames than the file has
    # the source picks every k-th frame, k drawn around file_fps / fps when that is not whole: a little spread
    assert abs(status.frames - expected) <= max(2, 0.15 * expected), (status.frames, expected)
    if fps < file_fps:
        assert status.frames < file_fps * seconds  # not every frame replayed slower


@pytest.mark.parametrize(("rate", "said"), [
    (Rate(5, "/v/a.mp4", 25.0), "sampling 5 frames per second of video (about 1 in 5 of its 25 fps), in real time"),
    (Rate(1, "/v/a.mp4", 10.0), "sampling 1 frame per second of video (about 1 in 10 of its 10 fps), in real time"),
    (Rate(30, "/v/a.mp4", 7.0), "every frame of its 7 fps, in real time"),
    (Rate(None, "/v/a.mp4"), "every frame of the file as fast as the detector goes"),
    (Rate(5, "rtsp://cam/1"), "at up to 5 fps"),
    (Rate(5, "/v/a.mp4", 25.0, backend="http"), "every frame of the file at up to 5 fps (slower than real time"),
])
def test_the_start_reply_says_which(rate: Rate, said: str) -> None:
    assert said in rate.describe()
