"""Camera faults on the http backend: the real inference server opens the camera and reconnects it by itself (every
second, streamvision's own), and ends the pipeline once a reconnection is refused: the bot starts it again there until
the camera answers. What the bot sees is its results: none for a while is a video loss, said once and its end once;
the frames the server draws carry the picture (a frozen one is said too); the pipeline runs on."""

from __future__ import annotations

import pytest

from bot.backends.http.backend import HttpBackend
from bot.config import load_settings
from bot.pipelines.status import status_line
from tests.fixtures import faulty
from tests.fixtures.health_watch import SAID_WITHIN, back_then_frozen_then_moving, said_of, start_watched
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
        h = await watched.until_said("video_lost", timeout=SAID_WITHIN + 10)
        text, at = said_of(watched, "video_lost")
        assert at - watched.fault("video").since <= SAID_WITHIN
        # the server's own reconnection, or the pipeline started again there (bot/backends/http/reopen.py)
        assert "(the inference server reconnects by itself)" in text or "(reconnecting, try " in text
        assert status_line(h).startswith("hosted (id hosted): reconnecting") and ", 0.0 fps" in status_line(h)
        await watched.hold(25)
        await back_then_frozen_then_moving(watched, camera, street)
    finally:
        await http_backend.stop_pipeline("hosted")
        camera.stop()
