"""builtin/motion on small frames: the walkers of the committed sub-stream, shrunk further, still move."""

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

from bot.backends.builtin.motion import MotionDetectorBlockV1

CLIP = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "substream_5fps.mp4"


def boxes_per_frame(scale: float, min_area: int = 400) -> np.ndarray:
    """Motion boxes in each frame of the sub-stream resized by `scale` (after the background is learnt)."""
    block, cap, counts = MotionDetectorBlockV1(), cv2.VideoCapture(str(CLIP)), []
    k = 0
    while (got := cap.read())[0]:
        frame = cv2.resize(got[1], None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) if scale != 1 else got[1]
        meta = VideoMetadata(video_identifier=f"walk{scale}", frame_number=k, frame_timestamp=datetime.now(), fps=5.0,
                             comes_from_video_file=True)
        image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="w"), numpy_image=frame,
                                  video_metadata=meta)
        out = block.run(images=image, confidence=0.0, min_area=min_area, history=30, threshold=16, warmup_frames=5)
        counts.append(len(out["predictions"]))
        k += 1
    cap.release()
    return np.array(counts[10:])


@pytest.mark.parametrize("scale", [0.6, 0.4])  # 230x173 and 154x115: people ~12-60 px tall
def test_walkers_on_a_small_frame_move_as_on_the_substream(scale):
    reference, small = boxes_per_frame(1.0), boxes_per_frame(scale)
    assert np.mean(small > 0) >= 0.9, small  # five to eight people walk here all the time
    assert small.mean() >= 0.5 * reference.mean(), (small.mean(), reference.mean())


@pytest.mark.parametrize(("width", "height", "seen"), [(800, 600, False), (640, 480, False), (320, 240, True)])
def test_min_area_holds_from_vga_up_and_shrinks_with_a_smaller_frame(width, height, seen):
    """An 8x8 px square (~250 px² once the mask is dilated) is under min_area 400 on VGA, over it at a quarter of VGA."""
    frame = np.zeros((height, width, 3), np.uint8)
    block = MotionDetectorBlockV1()
    out = None
    for k in range(8):  # it appears after the warm-up
        if k == 7:
            frame[100:108, 100:108] = 255
        meta = VideoMetadata(video_identifier=f"{width}", frame_number=k, frame_timestamp=datetime.now(), fps=5.0,
                             comes_from_video_file=True)
        image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="b"), numpy_image=frame.copy(),
                                  video_metadata=meta)
        out = block.run(images=image, confidence=0.0, min_area=400, history=30, threshold=16, warmup_frames=5)
    assert out is not None and (len(out["predictions"]) == 1) == seen
