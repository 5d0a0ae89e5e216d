"""Video frames over media.max_pixels are scaled where they are decoded (bot/backends/direct/capture.py), on a
loopback MJPEG camera of huge frames: the pipeline keeps running, its frames are within the limit, the user is told
once, and its memory stays bounded. One 12000x12000 MJPEG camera took one pipeline to 4 GB before."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.direct.capture import BoundedProducer, BoundedSource
from bot.backends.faults.kinds import RULES as CAMERA_RULES
from bot.media.frame_limit import bounded_size, scaled_note
from bot.monitoring.health import PipelineHealth
from bot.pipelines.status import status_line
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.fixtures.inference import make_video
from tests.fixtures.mjpeg import flat_jpeg, mjpeg_camera

pytestmark = pytest.mark.slow
DEFAULT_LIMIT = 40_000_000  # media.max_pixels' default
# The pipelines here run with a 10 MP limit, so the bounded frames (12000x12000 -> 3000x3000: 27 MB) sit far from
# the unbounded ones (432 MB) and the memory bound lies wide of both. Measured peak RSS growth: bounded +149 MB
# (12000x12000) and +74 MB (9000x7000); unbounded (DirectPipeline without BoundedSource) +2.1 GB and +0.9 GB, so the
# bound fails the unbounded 12000x12000 camera and the frame sizes fail both. (At the default 40 MP the bounded
# camera's frames are 6000x6000 and it took +0.44-0.57 GB, both cores busy or not.)
LIMIT = 10_000_000
GROWTH_BOUND = 1_000_000_000  # bytes of peak RSS one huge-frame pipeline may add
RESULTS = 8  # enough for every queue of the pipeline to have filled


def _status(key: str) -> int:
    """A /proc/self/status size in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} in /proc/self/status")


def _reset_peak() -> bool:
    """Start VmHWM (peak RSS) afresh at the current RSS (Linux: clear_refs 5); False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


# --- the producer alone: what size a frame leaves the decoder at ---------------------------------------------------

def _first_frames(reference: str | int, max_pixels: int, n: int = 2) -> tuple[list, list[tuple[int, int]], object]:
    """n frames a BoundedProducer gives, the sizes it reported as scaled, and its source properties."""
    reported: list[tuple[int, int]] = []
    producer = BoundedProducer(reference, max_pixels, lambda w, h: reported.append((w, h)))
    try:
        assert producer.isOpened()
        frames = []
        deadline = time.monotonic() + patience(30)
        while len(frames) < n and time.monotonic() < deadline:
            if producer.grab():
                ok, image = producer.retrieve()
                assert ok and image is not None
                frames.append(image)
        props = producer.discover_source_properties()
    finally:
        producer.release()
    assert len(frames) == n
    return frames, reported, props


@pytest.mark.parametrize(("size", "expected"), [
    ((12000, 12000), (6000, 6000)),  # 144 MP: JPEG's own half-scale decode, 36 MP
    ((9000, 7000), (4500, 3500)),  # 63 MP, not square: 15.75 MP
    ((6000, 6000), (6000, 6000)),  # 36 MP, just under the limit: untouched
    ((8001, 5001), (4001, 2501)),  # odd sides round up, as libjpeg's reduced decode does
])
def test_mjpeg_frames_leave_the_decoder_within_the_default_limit(size, expected):
    with mjpeg_camera([flat_jpeg(*size)], fps=10) as camera:
        frames, reported, props = _first_frames(camera.url, DEFAULT_LIMIT)
    assert {(f.shape[1], f.shape[0], f.shape[2]) for f in frames} == {(*expected, 3)}
    assert expected == bounded_size(*size, DEFAULT_LIMIT)
    assert reported == ([] if size == expected else [size])  # said once per size, not per frame
    assert (props.width, props.height) == expected


def test_a_camera_that_changes_size_after_it_connects_is_bounded_frame_by_frame():
    """The size a camera declares when it is opened (here 640x480) says nothing of its later frames: each frame is
    decoded at the scale its own header needs. Just over the limit, far over it, back under it (decoded whole, not
    kept at a reduced scale), and round again; each change over the limit, and the return under it, is heard."""
    import cv2
    import numpy as np

    small, just_over, huge = (640, 480), (3163, 3163), (12000, 12000)  # 3163x3163: 10.005 MP, over 10 MP by 0.05%
    sizes = [small, just_over, huge, small, just_over]
    jpegs = {size: flat_jpeg(*size) for size in set(sizes)}
    with mjpeg_camera([jpegs[size] for size in sizes], fps=10) as camera:
        frames, reported, props = _first_frames(camera.url, LIMIT, n=2 * len(sizes))
    assert [(f.shape[1], f.shape[0]) for f in frames] == [bounded_size(*size, LIMIT) for size in sizes] * 2
    assert bounded_size(*just_over, LIMIT) == (1582, 1582) and bounded_size(*huge, LIMIT) == (3000, 3000)
    whole = cv2.imdecode(np.frombuffer(jpegs[small], np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(frames[3], whole) and np.array_equal(frames[5], whole)  # under the limit: untouched
    assert reported == [just_over, huge, small, just_over, small, just_over, huge, small, just_over]
    assert (props.width, props.height) == small  # what it declared when opened


def test_a_reconnection_does_not_say_the_size_again_and_hears_it_has_come_down():
    """InferencePipeline opens the source anew on each reconnection: one BoundedSource, one record of the size its
    frames were last, so a camera back at the same size is not said again, and one back smaller is heard so."""
    reported: list[tuple[int, int]] = []
    with mjpeg_camera([flat_jpeg(4000, 3000)], fps=10) as camera:
        source = BoundedSource(camera.url, LIMIT, lambda w, h: reported.append((w, h)))
        for _ in range(2):
            producer = source()
            try:
                assert producer.grab() and producer.retrieve()[1].shape == (1500, 2000, 3)
            finally:
                producer.release()
    with mjpeg_camera([flat_jpeg(640, 480)], fps=10) as camera:
        source.reference = camera.url  # the camera came back at another resolution
        producer = source()
        try:
            assert producer.grab() and producer.retrieve()[1].shape == (480, 640, 3)
        finally:
            producer.release()
    assert reported == [(4000, 3000), (640, 480)]


def test_a_frame_that_is_not_a_jpeg_is_skipped_not_the_end_of_the_camera():
    """Every MJPEG camera's frames are now decoded here (not by FFmpeg, which skips a frame it cannot decode): one
    broken frame among good ones is skipped likewise; the stream goes on."""
    small = flat_jpeg(640, 480)
    with mjpeg_camera([small, b"--not a jpeg--", small[: len(small) // 4] + b"\x00" * 16], fps=10) as camera:
        frames, reported, _ = _first_frames(camera.url, LIMIT, n=4)
    assert all(f.shape == (480, 640, 3) for f in frames) and reported == []


def test_frames_of_another_codec_are_resized_right_after_their_decode(tmp_path):
    """An mp4 (not JPEG frames) is decoded whole by FFmpeg and resized before any queue holds it."""
    video = make_video(tmp_path / "v.mp4", size=(640, 480), frames=5)
    frames, reported, props = _first_frames(str(video), max_pixels=100_000)
    assert {f.shape for f in frames} == {(240, 320, 3)} and reported == [(640, 480)]
    assert (props.width, props.height, props.is_file) == (320, 240, True)
    frames, reported, _ = _first_frames(str(video), max_pixels=640 * 480)
    assert {f.shape for f in frames} == {(480, 640, 3)} and reported == []


def test_the_status_says_the_size_of_the_frame_it_delivers_not_of_the_one_decoded_last(tmp_path):
    """The decoder runs frames ahead of inference: a camera that sends huge frames, then small ones, has its small
    ones decoded while a huge one is still analysed. That huge frame's result says it was scaled, the small one's
    that it was not; before any frame is delivered the status says the size the camera opened with."""
    import numpy as np

    from bot.backends.direct.engine import SpecSource
    from bot.backends.direct.pipeline import DirectPipeline
    from bot.config import load_settings

    settings = load_settings({"VISION_AGENT_WORKSPACE": str(tmp_path), "VISION_AGENT_MAX_PIXELS": str(LIMIT)})
    pipeline = DirectPipeline("p1", "gate", "rtsp://127.0.0.1:1/cam", SpecSource({}, "k", "the workflow", "people"),
                              None, settings)  # type: ignore[arg-type]  # never started: no runtime needed

    def frame(width: int, height: int) -> object:  # a frame of that size, without its pixels
        return type("Frame", (), {"image": np.broadcast_to(np.zeros(1, np.uint8), (height, width, 3))})()

    note = scaled_note(12000, 12000, LIMIT)
    pipeline._on_scaled(12000, 12000)  # opened huge: the start's reply says so
    assert pipeline.handle().scaled == note
    pipeline._on_scaled(640, 480)  # the camera went back while its first huge frame was analysed
    for size, said in [((3000, 3000), note), ((640, 480), None), ((3000, 3000), note)]:
        pipeline._on_prediction(None, frame(*size))  # (None: a frame without predictions is said all the same)
        assert pipeline.handle().scaled == said, size


# --- a real pipeline ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bounded_backend(tmp_path_factory: pytest.TempPathFactory):
    """A DirectBackend with media.max_pixels at LIMIT, warmed up (inference imported, people detector and engine
    built, one small camera run) so what a test measures is its own pipeline."""
    from bot.backends.direct.backend import DirectBackend
    from bot.config import load_settings

    ws = tmp_path_factory.mktemp("bounded-ws")
    backend = DirectBackend(load_settings({"VISION_AGENT_WORKSPACE": str(ws), "VISION_AGENT_HEARTBEAT_MINUTES": "0",
                                           "VISION_AGENT_MAX_PIXELS": str(LIMIT)}))

    async def warm() -> None:
        got = threading.Semaphore(0)
        with mjpeg_camera([flat_jpeg(640, 480)]) as camera:
            await backend.start_pipeline("warm", "warm", camera.url, WorkflowRef(model_id="builtin/people"),
                                         on_result=lambda h, r: got.release())
            try:
                for _ in range(3):
                    assert await asyncio.to_thread(got.acquire, True, patience(120))
            finally:
                await backend.stop_pipeline("warm")

    asyncio.run(warm())
    yield backend
    asyncio.run(backend.close())


async def _run_camera(backend, name: str, *sizes: tuple[int, int],
                      enough: Callable[[list], bool] = lambda results: len(results) >= RESULTS,
                      ) -> tuple[list, list, list[tuple[str, str]], int]:
    """A pipeline on a loopback camera of frames of `sizes` in turn until `enough` of its results (RESULTS):
    (results, the handle as each was delivered (a health check after each), health problems said, peak RSS growth
    in bytes or -1 where it cannot be measured)."""
    jpegs = {size: flat_jpeg(*size) for size in set(sizes)}  # made (432 MB of pixels for 12000x12000) and freed
    # before the peak is reset
    results: list = []
    delivered: list = []  # the handle as each result was delivered: what the status said of that frame
    got = threading.Semaphore(0)

    def on_result(handle, result) -> None:
        results.append(result)
        delivered.append(handle)
        got.release()

    health = PipelineHealth(None, stall_seconds=600, min_fps=0)
    said: list[tuple[str, str]] = []
    handles = []
    with mjpeg_camera([jpegs[size] for size in sizes], fps=5) as camera:
        base = _status("VmRSS")
        measured = _reset_peak()
        await backend.start_pipeline(name, name, camera.url, WorkflowRef(model_id="builtin/people"),
                                     on_result=on_result)
        try:
            while not enough(results):  # a health check after each result: the note must come once, not per check
                assert await asyncio.to_thread(got.acquire, True, patience(120)), f"{len(results)} results"
                handles.append(delivered[len(handles)])
                assert (await backend.get_pipeline_status(name)).status == "running"
                # its camera repeats one flat frame, a frozen picture said as such (test_camera_faults*.py): here
                # the size notes only
                said += [p for p in health.new_problems(handles[-1], time.time()) if p[0] not in CAMERA_RULES]
            growth = _status("VmHWM") - base if measured else -1
        finally:
            await backend.stop_pipeline(name)
    return results, handles, said, growth


@pytest.mark.parametrize("size", [(12000, 12000), (9000, 7000)])
async def test_a_camera_of_huge_frames_runs_within_the_limit_and_is_said_once(bounded_backend, size):
    results, handles, said, growth = await _run_camera(bounded_backend, f"huge-{size[0]}x{size[1]}", size)
    expected = bounded_size(*size, LIMIT)
    assert expected[0] * expected[1] <= LIMIT
    # (a) it keeps running and delivers; (b) every frame it delivers is within the limit
    assert all(h.status == "running" for h in handles) and handles[-1].frames >= RESULTS
    assert {r.image_size for r in results} == {expected}
    # (c) one line says it, with what to do; the health check says it once however often it looks
    note = scaled_note(*size, LIMIT)
    assert note is not None and f"{size[0]}×{size[1]}" in note and "raise media.max_pixels" in note
    assert {h.scaled for h in handles} == {note}
    assert said == [("frames_scaled", f"{handles[0].name}: {note}.")]
    assert status_line(handles[-1]).count(note) == 1
    # (d) memory: the queues hold scaled frames only, and no full-size frame is ever decoded
    if growth < 0:
        pytest.skip("peak RSS cannot be reset here (/proc/self/clear_refs)")
    assert growth <= GROWTH_BOUND, f"peak RSS grew {growth / 1e6:.0f} MB (bound {GROWTH_BOUND / 1e6:.0f} MB)"


async def test_a_camera_that_raises_its_resolution_after_it_connects_runs_within_the_limit(bounded_backend):
    """It opens at 640x480, then sends 12000x12000 frames (and back, in turn): the pipeline's frames are the small
    ones whole and the huge ones scaled, the new size is said once however often the camera flips, and memory stays
    bounded (deciding once at open let FFmpeg decode every huge frame whole)."""
    small, huge = (640, 480), (12000, 12000)
    bounded = bounded_size(*huge, LIMIT)

    def enough(results: list) -> bool:  # both sizes delivered, or far past where they should have been
        return len(results) >= 60 or ({r.image_size for r in results} >= {small, bounded} and len(results) >= RESULTS)

    results, handles, said, growth = await _run_camera(bounded_backend, "raises", *[small] * 5, *[huge] * 5,
                                                       enough=enough)
    assert all(h.status == "running" for h in handles)
    assert {r.image_size for r in results} == {small, bounded}
    note = scaled_note(*huge, LIMIT)
    # each result's status says the size of its own frame, though the decoder has moved on to the next size
    assert [h.scaled for h in handles] == [note if r.image_size == bounded else None for r in results[:len(handles)]]
    assert note in {h.scaled for h in handles}
    assert said == [("frames_scaled", f"{handles[0].name}: {note}.")]
    if growth < 0:
        pytest.skip("peak RSS cannot be reset here (/proc/self/clear_refs)")
    assert growth <= GROWTH_BOUND, f"peak RSS grew {growth / 1e6:.0f} MB (bound {GROWTH_BOUND / 1e6:.0f} MB)"


async def test_a_camera_just_under_the_limit_is_not_touched(bounded_backend):
    size = (3650, 2730)  # 9.96 MP, under 10 MP
    results, handles, said, _ = await _run_camera(bounded_backend, "under", size)
    assert {r.image_size for r in results} == {size}
    assert {h.scaled for h in handles} == {None} and said == []


# --- backends whose server decodes: refused at start, before any server sees the source -------------------------

@pytest.mark.parametrize("backend_name", ["http", "webrtc"])
async def test_a_server_backend_refuses_a_camera_of_huge_frames_at_start(backend_name, base_env):
    """An inference server decodes every frame whole and cannot be told to scale them: the camera is refused with
    what to do, read off its stream header (nothing decoded here, no server asked). Under the limit it goes on to
    the server (none listens here, so that start fails on reaching it)."""
    from bot.backends.http.backend import HttpBackend
    from bot.backends.webrtc.backend import WebRtcBackend
    from bot.config import load_settings

    kind = {"http": HttpBackend, "webrtc": WebRtcBackend}[backend_name]
    backend = kind(load_settings({**base_env, "INFERENCE_SERVER_URL": f"http://127.0.0.1:{free_port()}"}))
    try:
        with mjpeg_camera([flat_jpeg(12000, 12000)]) as camera:
            with pytest.raises(BackendError) as refused:
                await backend.start_pipeline("huge", "huge", camera.url, WorkflowRef(model_id="builtin/people"))
        assert str(refused.value) == (
            "the camera sends 12000×12000 frames (144 MP), over media.max_pixels (40 MP), and the "
            f"{backend_name} backend decodes every frame whole: lower the camera's resolution, raise media.max_pixels, "
            "or start it with backend=direct, which scales such frames to fit")
        with mjpeg_camera([flat_jpeg(6000, 6000)]) as camera:
            with pytest.raises(BackendError, match="not reachable"):
                await backend.start_pipeline("under", "under", camera.url, WorkflowRef(model_id="builtin/people"))
    finally:
        await backend.close()


async def test_a_line_on_a_camera_of_huge_frames_is_placed_on_the_frames_the_pipeline_gets():
    """line= is placed and moved from the first frame's size at start: the scaled size, read without decoding one
    432 MB frame here (the probe used to decode it whole)."""
    from bot.media.sources import first_frame_size
    from bot.pipelines.analytics import compose

    jpeg = flat_jpeg(12000, 12000)
    with mjpeg_camera([jpeg]) as camera:
        base, measured = _status("VmRSS"), _reset_peak()
        assert await asyncio.to_thread(first_frame_size, camera.url, DEFAULT_LIMIT) == (12000, 12000)
        growth = _status("VmHWM") - base if measured else -1
        middle = await compose("builtin/people", camera.url, "middle", None, {}, max_pixels=DEFAULT_LIMIT)
        given = await compose("builtin/people", camera.url, "0,0,12000,6000@12000x12000", None, {},
                              max_pixels=DEFAULT_LIMIT)
    assert middle.line == [[3000, 0], [3000, 6000]]
    assert given.line == [[0, 0], [6000, 3000]]
    assert given.moved == " (given at 12000x12000, moved onto this stream's 6000x6000 frames)"
    assert growth < 100_000_000, f"reading the first frame's size grew peak RSS {growth / 1e6:.0f} MB"
