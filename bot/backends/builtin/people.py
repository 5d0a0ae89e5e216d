"""OpenCV HOG people, upscaled to the camera, with real NMS (model id builtin/people)."""

from __future__ import annotations

import threading
from typing import Literal

import cv2
import numpy as np
from inference.core.workflows.core_steps.common.utils import (
    empty_detections_with_image_metadata,
)
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    FLOAT_KIND,
    FLOAT_ZERO_TO_ONE_KIND,
    INTEGER_KIND,
    FloatZeroToOne,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.common import (
    _confidence_field,
    _DetectorManifest,
    _schema_extra,
    _xywh_to_xyxy,
    to_detections,
)


class HogPeopleManifest(_DetectorManifest):
    type: Literal["vision_agent/hog_people_detector@v1"]
    model_config = ConfigDict(
        json_schema_extra=_schema_extra(
            "HOG People Detector",
            "Detect standing people offline with OpenCV's HOG + linear SVM (model id builtin/people).",
            "Runs OpenCV's default HOG people detector; needs no weights download or network. Outputs "
            "object-detection predictions with class `person`, boxes tight from head to feet. Finds upright, "
            "mostly unoccluded people from `min_height` px tall (the frame is upscaled so they fill the detector's "
            "window, capped at `max_side`); misses people sitting, lying, cut off by the frame edge or seen from "
            "above. On 768×576 street CCTV: recall 0.9, precision 0.95+ for people 60–200 px tall, ~4 fps on one core.",
        )
    )
    confidence: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = _confidence_field(0.5)
    min_height: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=64, description="Smallest person to find, in pixels tall; smaller is slower (64 upscales 1.5x)."
    )
    max_side: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=1280, description="Cap on the longer side of the (upscaled) image the detector scans; bounds time."
    )
    scale_step: Selector(kind=[FLOAT_KIND]) | float = Field(
        default=1.1, description="Image pyramid step (>1); 1.05 finds a few more people at half the speed."
    )
    iou_threshold: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = Field(
        default=0.45, description="Non-maximum suppression: of two boxes overlapping more, keep the surer one."
    )


# The default SVM's window is 64×128 px with the person ~96 px tall in it: upscale so min_height fills that,
# and trim the window's margins so boxes hug the person (bottom centre = feet, for line counting).
_HOG_PERSON_PX = 96.0
_HOG_WINDOW = (64, 128)  # width, height
_HOG_MAX_SIDE = 2048  # whatever max_side a spec asks for (HOG on a 2048×1536 frame: ~1 s on one core)
_HOG_TRIM = (0.18, 0.07)  # share of window width/height trimmed per side, measured on bench/data/vtest_people.json


class HogPeopleDetectorBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        self._hog = cv2.HOGDescriptor()
        self._hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
        self._lock = threading.Lock()

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return HogPeopleManifest

    def run(
        self, images: WorkflowImageData, confidence: float, min_height: int, max_side: int, scale_step: float,
        iou_threshold: float,
    ) -> BlockResult:
        frame = images.numpy_image
        # Specs are untrusted: min_height 0 or max_side 10^6 must not make a 12× image (memory, minutes per frame).
        side = min(max(float(max_side), 128.0), float(_HOG_MAX_SIDE))
        scale = min(_HOG_PERSON_PX / max(int(min_height), 8), side / max(frame.shape[:2]))
        if frame.shape[0] * scale < _HOG_WINDOW[1] or frame.shape[1] * scale < _HOG_WINDOW[0]:
            # No person fits; and OpenCV's HOG segfaults (the whole bot) on some images smaller than its window.
            return {"predictions": empty_detections_with_image_metadata(image=images)}
        work = frame if scale == 1.0 else cv2.resize(frame, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)
        with self._lock:
            rects, weights = self._hog.detectMultiScale(
                work, winStride=(8, 8), padding=(8, 8), scale=max(float(scale_step), 1.01)
            )
        boxes = _xywh_to_xyxy(rects)
        trim = np.array([_HOG_TRIM[0], _HOG_TRIM[1], -_HOG_TRIM[0], -_HOG_TRIM[1]], dtype=np.float32)
        sizes = np.tile(boxes[:, 2:4] - boxes[:, 0:2], 2)
        boxes = (boxes + trim * sizes) / scale
        # SVM margins are unbounded; a logistic squashes them to (0, 1) with margin 0.8 -> 0.5 (the measured
        # operating point: precision 1.0 at recall 0.92 on the street labels; margin 0 -> 0.08).
        margins = np.asarray(weights, dtype=np.float32).reshape(-1)
        conf = 1.0 / (1.0 + np.exp(-3.0 * (margins - 0.8)))
        detections = to_detections(images, boxes, conf.astype(np.float32), "person", confidence)
        if len(detections) > 1:
            detections = detections.with_nms(threshold=iou_threshold)
        return {"predictions": detections}
