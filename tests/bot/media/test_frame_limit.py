"""The size rule for video frames over media.max_pixels, the line that says it, and the JPEG header read."""

from __future__ import annotations

import time

import pytest

from bot.backends.base import PipelineHandle
from bot.media.frame_limit import SAID_SIZES, bounded_size, divisor, jpeg_size, scaled_note
from bot.monitoring.events_log import event_type_of
from bot.monitoring.health import PipelineHealth
from bot.pipelines.status import status_line

LIMIT = 40_000_000


@pytest.mark.parametrize(("size", "k", "bounded"), [
    ((12000, 12000), 2, (6000, 6000)),
    ((9000, 7000), 2, (4500, 3500)),
    ((6000, 6000), 1, (6000, 6000)),  # 36 MP: just under
    ((40_000_000, 1), 1, (40_000_000, 1)),  # exactly the limit
    ((8001, 5001), 2, (4001, 2501)),  # odd sides round up
    ((65535, 65535), 16, (4096, 4096)),  # JPEG's largest: past its own 1/8, resized after
])
def test_frames_are_halved_until_they_fit(size, k, bounded):
    assert divisor(*size, LIMIT) == k
    assert bounded_size(*size, LIMIT) == bounded
    assert bounded[0] * bounded[1] <= LIMIT


def test_the_line_says_the_sizes_and_what_to_do():
    assert scaled_note(12000, 12000, LIMIT) == (
        "the camera sends 12000×12000 frames (144 MP), over media.max_pixels (40 MP): frames are scaled to "
        "6000×6000 (36 MP); lower the camera's resolution or raise media.max_pixels")
    assert scaled_note(9000, 7000, LIMIT, live=False) == (
        "the video has 9000×7000 frames (63 MP), over media.max_pixels (40 MP): frames are scaled to 4500×3500 "
        "(16 MP); use a smaller video or raise media.max_pixels")
    assert scaled_note(6000, 6000, LIMIT) is None


def _jpeg(width: int, height: int, **params: int) -> bytes:
    import cv2
    import numpy as np

    flags = [k for item in params.items() for k in (getattr(cv2, item[0]), item[1])]
    ok, buf = cv2.imencode(".jpg", np.zeros((height, width, 3), np.uint8), flags)
    assert ok
    return buf.tobytes()


def test_jpeg_size_reads_the_frame_header_only():
    assert jpeg_size(_jpeg(320, 200)) == (320, 200)
    assert jpeg_size(_jpeg(64, 48, IMWRITE_JPEG_PROGRESSIVE=1)) == (64, 48)  # SOF2
    data = _jpeg(33, 17)
    app = b"\xff\xe1" + (2 + 5000).to_bytes(2, "big") + b"x" * 5000  # a big APP1 (EXIF) segment first
    assert jpeg_size(data[:2] + app + data[2:]) == (33, 17)
    assert jpeg_size(data[:2] + b"\xff\xff" + data[2:]) == (33, 17)  # fill bytes before a marker
    header_end = data.index(b"\xff\xc0") + 9
    assert jpeg_size(data[:header_end]) == (33, 17)  # only the header needed
    for junk in (b"", b"\xff\xd8", b"\x89PNG\r\n\x1a\n", data[:header_end - 1], b"\xff\xd8\xff\xda\x00\x02",
                 b"\xff\xd8\x00\x00\x00\x00"):
        assert jpeg_size(junk) is None, junk


def test_a_scaled_pipeline_says_it_on_its_status_line_and_once_to_health():
    note = scaled_note(12000, 12000, LIMIT)
    handle = PipelineHandle("p1", "yard", "direct", "http://cam/mjpeg", "model builtin/people", time.time(), "running",
                            frames=3, scaled=note)
    assert note is not None and status_line(handle).count(note) == 1
    health = PipelineHealth(None, stall_seconds=600, min_fps=0)
    said = [problem for _ in range(3) for problem in health.new_problems(handle, time.time())]
    assert said == [("frames_scaled", f"yard: {note}.")] and event_type_of("frames_scaled") == "health"
    assert status_line(handle.with_(scaled=None)).count("media.max_pixels") == 0


def test_a_camera_that_changes_size_is_said_once_per_size_however_it_flips():
    """A camera may change its resolution after it connects (capture.FrameSizes hears each change): each size over
    the limit is said once, in the order they come; flipping back to a size already said, or under the limit and
    over again, says nothing more; a camera of ever new sizes is said SAID_SIZES times at most."""
    health = PipelineHealth(None, stall_seconds=600, min_fps=0)
    handle = PipelineHandle("p1", "yard", "direct", "http://cam/mjpeg", "model builtin/people", time.time(), "running",
                            frames=3)
    huge, wide = scaled_note(12000, 12000, LIMIT), scaled_note(9000, 7000, LIMIT)
    said = [problem for note in (huge, huge, None, wide, huge, None, huge, wide, wide)
            for problem in health.new_problems(handle.with_(scaled=note), time.time())]
    assert said == [("frames_scaled", f"yard: {huge}."), ("frames_scaled", f"yard: {wide}.")]
    other = handle.with_(pipeline_id="p2", name="gate")  # said per pipeline
    assert health.new_problems(other.with_(scaled=huge), time.time()) == [("frames_scaled", f"gate: {huge}.")]
    ever_new = [scaled_note(7000 + i, 7000, LIMIT) for i in range(SAID_SIZES * 2)]
    said = [p for note in ever_new for p in health.new_problems(handle.with_(pipeline_id="p3", scaled=note), 0)]
    assert len(said) == SAID_SIZES
