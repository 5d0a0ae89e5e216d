"""Camera faults on the http backend: the real inference server opens the camera and reconnects it by itself (every
second, streamvision's own), and ends the pipeline once a reconnection is refused: the bot starts it again there until
the camera answers. What the bot sees is its results: none for a while is a video loss, said once and its end once;
the frames the server draws carry the picture (a frozen one is said too); the pipeline runs on."""

from __future__ import annotations

import pytest

from bot.backends.faults.link import MAX_DELAY
from bot.backends.http.backend import HttpBackend
from bot.config import load_settings
from bot.pipelines.status import status_line
from tests.fixtures import faulty
from tests.fixtures.health_watch import SAID_WITHIN, said_of, start_watched
from tests.fixtures.mjpeg import MjpegCamera

pytestmark = pytest.mark.slow


@pytest.fixture
async def http_backend(inference_server, base_env):
    backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": inference_server}))
    yield backend
    await backend.close()


async def test_a_hosted_pipeline_says_its_camera_away_and_back_and_a_frozen_picture(http_backend) -> None:
    street = faulty.jpegs(faulty.live(faulty.street(), 118))
    camera = MjpegCamera(street, fps=5)
    watched = await start_watched(http_backend, "hosted", camera.url)
    try:
        camera.away()
        h = await watched.until("video_lost", lambda h: "video_lost" in watched.rules(), timeout=SAID_WITHIN + 10)
        text, at = said_of(watched, "video_lost")
        assert at - watched.fault("video").since <= SAID_WITHIN
        # the server's own reconnection, or the pipeline started again there (bot/backends/http/reopen.py)
        assert "(the inference server reconnects by itself)" in text or "(reconnecting, try " in text
        assert status_line(h).startswith("hosted (id hosted): reconnecting") and ", 0.0 fps" in status_line(h)
        await watched.hold(25)
        camera.back()
        await watched.until("video_back", lambda h: "video_back" in watched.rules(), timeout=MAX_DELAY + 40)
        await watched.results_after(3)  # the server's pipeline did not end: it counts again
        camera.frames = [street[40]]
        await watched.until("picture_frozen", lambda h: "picture_frozen" in watched.rules(), timeout=60)
        camera.frames = street
        await watched.until("picture_moving", lambda h: "picture_moving" in watched.rules(), timeout=60)
        assert watched.rules() == ["video_lost", "video_back", "picture_frozen", "picture_moving"]
        assert (await watched.check()).status == "running"
    finally:
        await http_backend.stop_pipeline("hosted")
        camera.stop()
