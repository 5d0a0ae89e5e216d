"""DirectBackend on big inputs: a photo near the pixel limit is analysed at bounded cost, one over it is refused."""

from __future__ import annotations

import cv2
import pytest

from bot.backends.base import BackendError
from tests.fixtures.inference import FACE_BOX, astronaut_bgr

pytestmark = pytest.mark.slow


async def test_a_37_megapixel_photo_still_finds_the_face_in_full_size_coordinates(direct_backend):
    big = cv2.resize(astronaut_bgr(), (6144, 6144), interpolation=cv2.INTER_CUBIC)  # 12×, just under 40 MP
    ok, buf = cv2.imencode(".jpg", big, [cv2.IMWRITE_JPEG_QUALITY, 85])
    assert ok
    del big
    result = await direct_backend.run_single(buf.tobytes(), model_id="builtin/faces")
    assert result.image_size == (6144, 6144)
    best = max(result.detections, key=lambda d: d.confidence)  # upscaled skin texture adds weak false hits
    x1, y1, x2, y2 = best.xyxy  # the Haar block looked at a 2048 px copy and scaled the box back
    fx1, fy1, fx2, fy2 = (v * 12 for v in FACE_BOX)
    assert fx1 < x1 < x2 < fx2 and fy1 < y1 < y2 < fy2


async def test_an_image_over_the_limit_is_refused_before_opencv_decodes_it(direct_backend, png_12000):
    with pytest.raises(BackendError, match=r"12000×12000 \(144 MP\); the limit is 40 MP"):
        await direct_backend.run_single(png_12000, model_id="builtin/faces")
