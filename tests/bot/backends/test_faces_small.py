"""builtin/faces on a sub-stream: faces of 12-20 px (LFW faces from scikit-image, tiled into a 384x288 street frame).

The Haar cascade alone (the default, min_size 24) finds faces from about 24-32 px, and says so in the model's
description; min_size under 24 upscales small frames so faces down to it reach that, within a pixel budget, and
leaves big frames alone.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import cv2
import numpy as np
import pytest
from inference.core.workflows.execution_engine.entities.base import (
    ImageParentMetadata,
    VideoMetadata,
    WorkflowImageData,
)

from bot.backends.builtin.faces import HaarFaceDetectorBlockV1, face_scale, video_min_size

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


def detect(frame: np.ndarray, video: bool = False, **settings) -> np.ndarray:
    meta = VideoMetadata(video_identifier="cam", frame_number=0, frame_timestamp=datetime(2026, 1, 1), fps=5.0,
                         comes_from_video_file=False) if video else None
    image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="f"), numpy_image=frame,
                              video_metadata=meta)
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


@pytest.mark.parametrize("size", [14, 16])
def test_a_sub_stream_video_finds_its_small_faces_when_adaptive_and_a_photo_is_left_as_it_was(size):
    frame, boxes = tiled(True, size)
    in_video, as_photo = found(boxes, detect(frame, video=True, adaptive=True)), found(boxes, detect(frame, adaptive=True))
    assert in_video >= 0.5 * len(boxes), (in_video, len(boxes))
    assert as_photo <= 0.1 * len(boxes), (as_photo, len(boxes))
    assert found(boxes, detect(frame, video=True)) == as_photo  # off by default (false faces on still texture)


def test_a_sub_stream_video_of_non_faces_gets_no_faces():
    frame, boxes = tiled(False, 16)
    hits = detect(frame, video=True, adaptive=True)
    assert found(boxes, hits) <= 2 and len(hits) <= 3, hits


@pytest.mark.parametrize(("longest", "asked", "sought"), [(352, 24, 12), (640, 24, 12), (1279, 24, 12), (1280, 24, 24),
                                                         (1920, 24, 24), (640, 8, 8), (640, 48, 12)])
def test_video_seeks_small_faces_only_on_frames_smaller_than_the_upscale_budget(longest, asked, sought):
    assert video_min_size(longest, asked, 1280) == sought


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

    text = BUILTIN_DESCRIPTIONS["builtin/faces"]
    assert "24-32 px" in text and "12-16 px" in text and "adaptive: true" in text and "main stream" in text
