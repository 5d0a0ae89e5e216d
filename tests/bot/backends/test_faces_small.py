"""builtin/faces on a sub-stream: faces of 12-20 px (LFW faces from scikit-image, tiled into a 384x288 street frame).

The Haar cascade alone (the default, min_size 24) finds faces from about 24-32 px, and says so in the model's
description; min_size under 24 upscales small frames so faces down to it reach that, within a pixel budget, and
leaves big frames alone.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from inference.core.workflows.execution_engine.entities.base import ImageParentMetadata, WorkflowImageData

from bot.backends.builtin.faces import HaarFaceDetectorBlockV1, face_scale

STREET = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "street.jpg"


def tiled(faces: bool, size: int) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """A 384x288 street frame with LFW's faces (or its non-faces) pasted `size` px square on a grid; their boxes."""
    from skimage.data import lfw_subset

    crops = lfw_subset()[:100] if faces else lfw_subset()[100:]
    frame = cv2.resize(cv2.imread(str(STREET)), (384, 288), interpolation=cv2.INTER_AREA)
    step, boxes = 2 * size + 4, []
    for k, (y, x) in enumerate((y, x) for y in range(4, 288 - step, step) for x in range(4, 384 - step, step)):
        if k == len(crops):
            break
        tile = cv2.resize((crops[k] * 255).astype(np.uint8), (size, size), interpolation=cv2.INTER_AREA)
        frame[y:y + size, x:x + size] = tile[..., None]
        boxes.append((x, y, x + size, y + size))
    return frame, boxes


def detect(frame: np.ndarray, **settings) -> np.ndarray:
    image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="f"), numpy_image=frame)
    args = {"confidence": 0.0, "scale_factor": 1.1, "min_neighbors": 5, "min_size": 24, "max_side": 2048,
            "upscale_side": 1280, **settings}
    return HaarFaceDetectorBlockV1().run(images=image, **args)["predictions"].xyxy


def found(boxes: list[tuple[int, int, int, int]], hits: np.ndarray) -> int:
    def iou(a, b) -> float:
        ix, iy = max(0, min(a[2], b[2]) - max(a[0], b[0])), max(0, min(a[3], b[3]) - max(a[1], b[1]))
        return ix * iy / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - ix * iy)

    return sum(any(iou(b, h) > 0.3 for h in hits) for b in boxes)


@pytest.mark.parametrize("size", [14, 18])
def test_faces_at_substream_sizes_are_found_with_a_small_min_size_and_not_by_the_cascade_alone(size):
    frame, boxes = tiled(True, size)
    adapted, alone = found(boxes, detect(frame, min_size=12)), found(boxes, detect(frame))
    assert adapted >= 0.5 * len(boxes), (adapted, len(boxes))
    assert alone <= 0.1 * len(boxes), (alone, len(boxes))  # what builtin/faces found before on this frame


def test_upscaling_adds_no_faces_where_there_are_none():
    frame, boxes = tiled(False, 16)
    hits = detect(frame, min_size=12)
    assert found(boxes, hits) <= 2 and len(hits) <= 3, hits


@pytest.mark.parametrize(("longest", "scale"), [(384, 32 / 12), (352, 32 / 12), (768, 1280 / 768), (1280, 1.0),
                                                (1920, 1.0), (4096, 0.5)])
def test_small_frames_are_upscaled_within_the_budget_and_big_ones_left_or_shrunk(longest, scale):
    assert face_scale(longest, 12, 2048, 1280) == pytest.approx(scale)


def test_untrusted_settings_cannot_blow_up_the_frame():
    assert face_scale(100, 0, 10**9, 10**9) <= 8192 / 100
    assert face_scale(640, 48, 2048, 1280) == 1.0  # only big faces wanted: no upscale
    assert face_scale(384, 24, 2048, 1280) == 1.0  # the default: the cascade's own sizes, as it always ran


def test_the_model_list_states_the_limit():
    from bot.backends.workflows import BUILTIN_DESCRIPTIONS

    assert "24-32 px" in BUILTIN_DESCRIPTIONS["builtin/faces"] and "main stream" in BUILTIN_DESCRIPTIONS["builtin/faces"]
