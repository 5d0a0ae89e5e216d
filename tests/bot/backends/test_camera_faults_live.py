"""Camera faults on real pipelines (the direct backend's InferencePipeline) and loopback cameras that fail the way
cameras do: an MJPEG camera that goes away (connections refused) for longer than the reconnection's delays and
comes back, one that hangs (connected, nothing sent), one that freezes and then goes black, and a snapshot camera
(one JPEG per request) that goes away. The health check here runs every second (the scheduler's runs every 10 s);
each fault must be said once, its end once with how long it lasted, and the pipeline must run and count on."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bot.backends.faults.link import MAX_DELAY
from bot.backends.faults.watch import VIDEO_SECONDS
from bot.pipelines.status import status_line
from tests.fixtures import faulty
from tests.fixtures.health_watch import (
    SAID_WITHIN,
    back_then_frozen_then_moving,
    direct_backend,
    said_of,
    start_watched,
)
from tests.fixtures.mjpeg import MjpegCamera

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory):
    yield from direct_backend(tmp_path_factory, "faults-ws")


@pytest.fixture(scope="module")
def street_jpegs() -> list[bytes]:
    return faulty.jpegs(faulty.live(faulty.street(), 118))


async def test_a_camera_away_longer_than_its_reconnect_delays_comes_back_and_counts_again(
    backend, street_jpegs
) -> None:
    away_for = 50.0  # past the reconnection's delays reaching MAX_DELAY (1+2+4+8+15 s and a second after each)
    camera = MjpegCamera(street_jpegs, fps=5)
    watched = await start_watched(backend, "away", camera.url)
    try:
        camera.away()
        gone = time.time()
        h = await watched.until_said("video_lost", timeout=SAID_WITHIN + 10)
        fault = watched.fault("video")
        text, said_at = said_of(watched, "video_lost")
        print(f"video lost said {said_at - fault.since:.1f} s after the last frame")  # the bench reports it too
        assert said_at - fault.since <= SAID_WITHIN
        line = status_line(h)
        assert "reconnecting, " in line and ", 0.0 fps" in line and "; camera: no video for " in line
        assert "connection refused" in text and "video_lost" not in watched.rules()[1:]
        await watched.hold(gone + away_for - time.time())
        tries = watched.last.faults[0].text if watched.last else ""
        assert "reconnecting, try " in tries
        attempts = int(tries.split("try ")[1].split(":")[0].split(")")[0])
        assert attempts <= 12  # a try a second would be ~50; the backoff spaces them out
        camera.back()
        back = time.time()
        before = watched.results
        await watched.until_said("video_back", timeout=MAX_DELAY + 30)
        await watched.results_after(3)  # counting again
        h = await watched.check()
        assert h.status == "running" and watched.results > before and h.frames > 3
        text, said_at = said_of(watched, "video_back")
        assert text.startswith("away: video back after ")
        lasted = watched.last and next(f for f in watched.last.faults if f.kind == "video")
        assert lasted and away_for - 2 <= lasted.ended - lasted.since <= away_for + MAX_DELAY + (time.time() - back)
        assert watched.rules().count("video_lost") == 1 and watched.rules().count("video_back") == 1
        assert "stalled" not in watched.rules() and "low_fps" not in watched.rules()
        assert "; camera: " not in status_line(h)  # over: the status line is clean again
    finally:
        await backend.stop_pipeline("away")
        camera.stop()


async def test_a_camera_that_hangs_is_video_lost_then_back(backend, street_jpegs) -> None:
    camera = MjpegCamera(street_jpegs, fps=5)
    watched = await start_watched(backend, "hung", camera.url)
    try:
        camera.hold()  # connected, sending nothing
        await watched.until_said("video_lost", timeout=SAID_WITHIN + 10)
        fault = watched.fault("video")
        assert said_of(watched, "video_lost")[1] - fault.since <= SAID_WITHIN
        await watched.hold(VIDEO_SECONDS)
        camera.release()
        await watched.until_said("video_back", timeout=60)
        await watched.results_after(2)
        assert (await watched.check()).status == "running"
        assert watched.rules() == ["video_lost", "video_back"]
    finally:
        await backend.stop_pipeline("hung")
        camera.stop()


async def test_a_frozen_then_black_camera_is_said_once_each_and_back(backend, street_jpegs) -> None:
    rng = np.random.default_rng(11)
    camera = MjpegCamera(street_jpegs, fps=5)
    watched = await start_watched(backend, "yard", camera.url)
    try:
        await watched.hold(12)  # live: nothing to say
        assert watched.rules() == []
        camera.frames = [street_jpegs[40]]  # the same frame, over and over
        await watched.until_said("picture_frozen", timeout=60)
        frozen_at = said_of(watched, "picture_frozen")[1]
        print(f"frozen said {frozen_at - watched.fault('frozen').since:.1f} s after the picture froze")
        camera.frames = faulty.jpegs(faulty.black(faulty.street()[0].shape, 20, rng))
        await watched.until_said("picture_black", timeout=60)
        camera.frames = street_jpegs
        await watched.until_said("picture_back", timeout=60)
        await watched.hold(5)
        rules = watched.rules()
        assert rules.count("picture_frozen") == 1 and rules.count("picture_black") == 1
        assert rules.count("picture_back") == 1 and "video_lost" not in rules
        assert (await watched.check()).status == "running"
    finally:
        await backend.stop_pipeline("yard")
        camera.stop()


async def test_a_snapshot_camera_runs_on_and_its_absence_is_said(backend, street_jpegs) -> None:
    """A camera whose URL gives one JPEG per request: each frame is a connection that ends, opened again at once
    (a frame starts the backoff afresh); away, it is video lost, back, it runs on."""
    camera = MjpegCamera(street_jpegs, fps=5)
    watched = await start_watched(backend, "snap", camera.snapshot_url)
    try:
        await watched.hold(5)
        assert watched.rules() == [] and watched.last and watched.last.status == "running"
        camera.away()
        await watched.until_said("video_lost", timeout=SAID_WITHIN + 10)
        await watched.hold(10)
        camera.back()
        await watched.until_said("video_back", timeout=MAX_DELAY + 30)
        before = watched.results
        await watched.results_after(3)
        assert watched.results > before and (await watched.check()).status == "running"
    finally:
        await backend.stop_pipeline("snap")
        camera.stop()


async def test_an_rtsp_camera_that_goes_away_and_freezes_is_said_and_comes_back(backend) -> None:
    """H.264 over RTSP (tests/fixtures/rtsp.py): away for 30 s, then a frozen picture (the encoder fed one frame:
    skip blocks and a re-encoded keyframe a second, not bit-identical frames), then live again."""
    from tests.fixtures.rtsp import RtspCamera

    street = faulty.live(faulty.street(), 118)
    camera = RtspCamera(street, fps=5)
    watched = await start_watched(backend, "rtsp", camera.url)
    try:
        camera.away()
        await watched.until_said("video_lost", timeout=SAID_WITHIN + 10)
        assert said_of(watched, "video_lost")[1] - watched.fault("video").since <= SAID_WITHIN
        await watched.hold(20)
        await back_then_frozen_then_moving(watched, camera, street)
    finally:
        await backend.stop_pipeline("rtsp")
        camera.stop()
