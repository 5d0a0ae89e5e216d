"""Background-subtraction motion (model id builtin/motion)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Literal

import cv2
import numpy as np
from inference.core.workflows.core_steps.common.utils import (
    empty_detections_with_image_metadata,
)
from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    BOOLEAN_KIND,
    INTEGER_KIND,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.common import (
    PREDICTIONS,
    _DetectorManifest,
    _schema_extra,
    _xywh_to_xyxy,
    to_detections,
)
from bot.backends.builtin.motion_gate import Gates


class MotionManifest(_DetectorManifest):
    type: Literal["vision_agent/motion_detector@v1"]
    model_config = ConfigDict(
        json_schema_extra=_schema_extra(
            "Motion Detector",
            "Detect moving regions in video with background subtraction (model id builtin/motion).",
            "Keeps an OpenCV MOG2 background model per video (video_metadata.video_identifier) and outputs boxes "
            "around moving regions as object-detection predictions with class `motion`, plus a `motion` flag. "
            "Needs a video pipeline: a single still image never shows motion.",
        )
    )
    min_area: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=400, description="Smallest moving blob (px² on a 640x480 frame; a smaller frame scales it down).")
    history: Selector(kind=[INTEGER_KIND]) | int = Field(default=30, description="Frames in the background model.")
    threshold: Selector(kind=[INTEGER_KIND]) | int = Field(default=16, description="MOG2 variance threshold.")
    warmup_frames: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=5, description="Frames per video used only to learn the background (no detections)."
    )

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return PREDICTIONS + [OutputDefinition(name="motion", kind=[BOOLEAN_KIND])]


# min_area is meant on a VGA frame: the same walker covers a quarter of the pixels on a half-size sub-stream, and a
# fixed 400 px² dropped them (vtest.avi at 231x173: motion in 0.67 of frames, 0.9 boxes where the full stream has 4.8;
# scaled with the area: 1.0 and 3.6). Bigger frames keep min_area as given.
REFERENCE_AREA = 640 * 480


class MotionDetectorBlockV1(WorkflowBlock):
    MAX_VIDEOS = 64  # background models kept; least recently seen video is dropped beyond this

    def __init__(self) -> None:
        self._subtractors: OrderedDict[str, list[Any]] = OrderedDict()  # video id -> [MOG2, frames seen]
        self._kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
        self._gates = Gates()

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return MotionManifest

    def _subtractor(self, video_id: str, history: int, threshold: int) -> list[Any]:
        sub = self._subtractors.pop(video_id, None)
        if sub is None:
            sub = [cv2.createBackgroundSubtractorMOG2(history=history, varThreshold=threshold, detectShadows=False), 0]
        sub[1] += 1
        self._subtractors[video_id] = sub
        while len(self._subtractors) > self.MAX_VIDEOS:
            self._subtractors.popitem(last=False)
        return sub

    def run(
        self, images: WorkflowImageData, confidence: float, min_area: int, history: int, threshold: int,
        warmup_frames: int, motion_gate: bool = True,
    ) -> BlockResult:
        # Gated only while quiet: a frame like the last one, when that one showed no motion, shows none either.
        if motion_gate and self._gates.repeat(images) is not None:
            return {"predictions": empty_detections_with_image_metadata(image=images), "motion": False}
        result = self._detect(images, confidence, min_area, history, threshold, warmup_frames)
        if motion_gate:  # still learning the background (warm-up) or moving: nothing to repeat
            seen = self._subtractors.get(images.video_metadata.video_identifier, [None, 0])[1]
            self._gates.found(images, True if seen > warmup_frames and not result["motion"] else None)
        return result

    def _detect(
        self, images: WorkflowImageData, confidence: float, min_area: int, history: int, threshold: int, warmup_frames: int
    ) -> BlockResult:
        subtractor, seen = self._subtractor(images.video_metadata.video_identifier, history, threshold)
        mask = subtractor.apply(images.numpy_image)
        if seen <= warmup_frames:  # the first frames are all "foreground" to an empty background model
            return {"predictions": empty_detections_with_image_metadata(image=images), "motion": False}
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, self._kernel)
        mask = cv2.dilate(mask, self._kernel, iterations=2)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        smallest = min_area * min(1.0, mask.shape[0] * mask.shape[1] / REFERENCE_AREA)
        rects = [cv2.boundingRect(c) for c in contours if cv2.contourArea(c) >= smallest]
        # Confidence: share of the box that actually moved, so a thin flicker scores low.
        conf = np.array(
            [min(1.0, cv2.countNonZero(mask[y : y + h, x : x + w]) / max(w * h, 1)) for x, y, w, h in rects],
            dtype=np.float32,
        )
        boxes = _xywh_to_xyxy(rects) if rects else np.zeros((0, 4), dtype=np.float32)
        detections = to_detections(images, boxes, conf, "motion", confidence)
        return {"predictions": detections, "motion": len(detections) > 0}
