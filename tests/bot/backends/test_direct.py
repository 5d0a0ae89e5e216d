"""DirectBackend: single images through the in-process workflow engine with the offline detectors."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

from bot.backends.base import BackendError
from bot.backends.direct import DirectBackend
from bot.backends.workflows import detection_workflow
from tests.fixtures.common import free_port

pytestmark = pytest.mark.slow


async def test_astronaut_face_found_and_frame_annotated(direct_backend, astronaut_jpeg):
    result = await direct_backend.run_single(astronaut_jpeg, model_id="builtin/faces")
    assert result.counts() == {"face": 1}
    x1, y1, x2, y2 = result.detections[0].xyxy
    assert 150 < x1 < 200 and 40 < y1 < 90 and 250 < x2 < 300 and 140 < y2 < 190
    assert 0 < result.detections[0].confidence <= 1
    assert result.image_size == (512, 512)
    frame = cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)
    original = cv2.imdecode(np.frombuffer(astronaut_jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert frame.shape == original.shape
    # the box is drawn: pixels on the box edge changed, far-away pixels did not (beyond JPEG noise)
    edge = np.abs(frame[66:160, 176:179].astype(int) - original[66:160, 176:179].astype(int)).mean()
    far = np.abs(frame[400:500, 400:500].astype(int) - original[400:500, 400:500].astype(int)).mean()
    assert edge > 20 and far < 5


async def test_inline_spec_and_confidence_filter(direct_backend, astronaut_jpeg):
    spec = detection_workflow("builtin/faces", confidence=0.99, track=False, annotate=False)
    result = await direct_backend.run_single(astronaut_jpeg, workflow_spec=spec)
    assert result.detections == ()
    assert result.frame is not None  # drawn by supervision when the workflow has no visualization


async def test_undecodable_image_is_a_clear_error(direct_backend):
    with pytest.raises(BackendError, match="could not be decoded"):
        await direct_backend.run_single(b"not an image", model_id="builtin/faces")


async def test_roboflow_model_offline_fails_fast_with_hint(settings, astronaut_jpeg, monkeypatch, direct_backend):
    # Roboflow's API "moved" to a closed local port: the same refusal an offline machine gets, even in CI.
    monkeypatch.setattr("bot.backends.runtime._api_base_url", lambda: f"https://127.0.0.1:{free_port()}")
    backend = DirectBackend(settings)
    start = time.monotonic()
    with pytest.raises(BackendError) as err:
        await backend.run_single(astronaut_jpeg, model_id="my-ws/cars/3")
    assert time.monotonic() - start < 8
    msg = str(err.value)
    assert "my-ws/cars/3" in msg and "ROBOFLOW_API_KEY" in msg and "builtin/faces" in msg
