"""Workflows plugin: offline detectors (OpenCV Haar faces, HOG people, motion) as object-detection blocks."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import Any, Literal
from uuid import uuid4

import cv2
import numpy as np
import supervision as sv
from inference.core.workflows.core_steps.common.utils import (
    attach_parents_coordinates_to_sv_detections,
    empty_detections_with_image_metadata,
)
from inference.core.workflows.execution_engine.constants import (
    DETECTION_ID_KEY,
    IMAGE_DIMENSIONS_KEY,
    PARENT_ID_KEY,
    PREDICTION_TYPE_KEY,
)
from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    BOOLEAN_KIND,
    FLOAT_KIND,
    FLOAT_ZERO_TO_ONE_KIND,
    IMAGE_KIND,
    INTEGER_KIND,
    OBJECT_DETECTION_PREDICTION_KIND,
    FloatZeroToOne,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import AliasChoices, ConfigDict, Field
from supervision.config import CLASS_NAME_DATA_FIELD

PREDICTIONS = [OutputDefinition(name="predictions", kind=[OBJECT_DETECTION_PREDICTION_KIND])]
_EE_COMPAT = ">=1.3.0,<2.0.0"


def _schema_extra(name: str, short: str, long: str) -> dict[str, Any]:
    return {
        "name": name,
        "version": "v1",
        "short_description": short,
        "long_description": long,
        "license": "Apache-2.0",
        "block_type": "model",
        "ui_manifest": {"section": "model", "icon": "far fa-eye", "opencv": True},
    }


def _image_field() -> Any:
    return Field(
        title="Input Image",
        description="The image to run the detector on.",
        examples=["$inputs.image"],
        validation_alias=AliasChoices("images", "image"),
    )


def _confidence_field(default: float) -> Any:
    return Field(default=default, description="Drop detections with a lower confidence.", examples=[0.3, "$inputs.confidence"])


def to_detections(
    image: WorkflowImageData, boxes: np.ndarray, confidence: np.ndarray, class_name: str, min_confidence: float = 0.0
) -> sv.Detections:
    """Build sv.Detections with the metadata real model blocks attach (ids, parents, dimensions, prediction type)."""
    keep = confidence >= min_confidence
    boxes, confidence = boxes[keep], confidence[keep]
    if len(boxes) == 0:
        return empty_detections_with_image_metadata(image=image)
    n = len(boxes)
    detections = sv.Detections(
        xyxy=boxes.astype(np.float32),
        confidence=confidence.astype(np.float32),
        class_id=np.zeros(n, dtype=int),
        data={CLASS_NAME_DATA_FIELD: np.array([class_name] * n)},
    )
    height, width = image.numpy_image.shape[:2]
    detections[PARENT_ID_KEY] = np.array([image.parent_metadata.parent_id] * n)
    detections[PREDICTION_TYPE_KEY] = np.array(["object-detection"] * n)
    detections[DETECTION_ID_KEY] = np.array([str(uuid4()) for _ in range(n)])
    detections[IMAGE_DIMENSIONS_KEY] = np.array([[height, width]] * n)
    return attach_parents_coordinates_to_sv_detections(detections=detections, image=image)


def _xywh_to_xyxy(rects: Any) -> np.ndarray:
    arr = np.asarray(rects, dtype=np.float32).reshape(-1, 4)
    arr[:, 2] += arr[:, 0]
    arr[:, 3] += arr[:, 1]
    return arr


# Every builtin detector takes an image and a confidence floor and outputs object-detection predictions.
class _DetectorManifest(WorkflowBlockManifest):
    images: Selector(kind=[IMAGE_KIND]) = _image_field()
    confidence: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = _confidence_field(0.0)

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return PREDICTIONS

    @classmethod
    def get_execution_engine_compatibility(cls) -> str | None:
        return _EE_COMPAT


# --- Haar faces --------------------------------------------------------------------------------------------------


class HaarFaceManifest(_DetectorManifest):
    type: Literal["vision_agent/haar_face_detector@v1"]
    model_config = ConfigDict(
        json_schema_extra=_schema_extra(
            "Haar Face Detector",
            "Detect frontal faces offline with OpenCV's Haar cascade (model id builtin/faces).",
            "Runs OpenCV's pre-trained frontal-face Haar cascade; needs no weights download or network. Outputs "
            "object-detection predictions with class `face`. Confidence grows with the number of overlapping raw "
            "hits (neighbours). Good for frontal faces in decent light; misses profiles.",
        )
    )
    scale_factor: Selector(kind=[FLOAT_KIND]) | float = Field(default=1.1, description="Image pyramid step (>1).")
    min_neighbors: Selector(kind=[INTEGER_KIND]) | int = Field(default=5, description="Hits needed to keep a face.")
    min_size: Selector(kind=[INTEGER_KIND]) | int = Field(default=24, description="Smallest face side in pixels.")


class HaarFaceDetectorBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        # One cascade per block instance: detectMultiScale on a shared instance is not safe across threads.
        self._cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
        self._lock = threading.Lock()

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return HaarFaceManifest

    def run(
        self, images: WorkflowImageData, confidence: float, scale_factor: float, min_neighbors: int, min_size: int
    ) -> BlockResult:
        gray = cv2.cvtColor(images.numpy_image, cv2.COLOR_BGR2GRAY)
        with self._lock:
            rects, neighbours = self._cascade.detectMultiScale2(
                gray, scaleFactor=scale_factor, minNeighbors=min_neighbors, minSize=(min_size, min_size)
            )
        hits = np.asarray(neighbours, dtype=np.float32).reshape(-1)
        # Map neighbour count to (0, 1): min_neighbors hits -> ~0.33, 4x that -> ~0.8.
        conf = hits / (hits + 2.0 * max(int(min_neighbors), 1))
        return {"predictions": to_detections(images, _xywh_to_xyxy(rects), conf, "face", confidence)}


# --- HOG people --------------------------------------------------------------------------------------------------


class HogPeopleManifest(_DetectorManifest):
    type: Literal["vision_agent/hog_people_detector@v1"]
    model_config = ConfigDict(
        json_schema_extra=_schema_extra(
            "HOG People Detector",
            "Detect standing people offline with OpenCV's HOG + linear SVM (model id builtin/people).",
            "Runs OpenCV's default HOG people detector; needs no weights download or network. Outputs "
            "object-detection predictions with class `person`. Works on upright pedestrians at least ~100 px tall; "
            "the image is downscaled to `max_side` first for speed.",
        )
    )
    confidence: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = _confidence_field(0.3)
    max_side: Selector(kind=[INTEGER_KIND]) | int = Field(default=640, description="Downscale longer side to this.")
    iou_threshold: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = Field(default=0.45)


class HogPeopleDetectorBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        self._hog = cv2.HOGDescriptor()
        self._hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
        self._lock = threading.Lock()

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return HogPeopleManifest

    def run(self, images: WorkflowImageData, confidence: float, max_side: int, iou_threshold: float) -> BlockResult:
        frame = images.numpy_image
        scale = min(1.0, float(max_side) / max(frame.shape[:2]))
        small = cv2.resize(frame, None, fx=scale, fy=scale) if scale < 1.0 else frame
        with self._lock:
            rects, weights = self._hog.detectMultiScale(small, winStride=(8, 8), padding=(8, 8), scale=1.05)
        boxes = _xywh_to_xyxy(rects) / scale
        # SVM margins are unbounded; a logistic squashes them to (0, 1) with margin 0 -> 0.5.
        conf = np.array([1.0 / (1.0 + math.exp(-2.0 * float(w))) for w in np.asarray(weights).reshape(-1)])
        detections = to_detections(images, boxes, conf.astype(np.float32), "person", confidence)
        if len(detections) > 1:
            detections = detections.with_nms(threshold=iou_threshold)
        return {"predictions": detections}


# --- Motion ------------------------------------------------------------------------------------------------------


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
    min_area: Selector(kind=[INTEGER_KIND]) | int = Field(default=400, description="Smallest moving blob (px²).")
    history: Selector(kind=[INTEGER_KIND]) | int = Field(default=30, description="Frames in the background model.")
    threshold: Selector(kind=[INTEGER_KIND]) | int = Field(default=16, description="MOG2 variance threshold.")
    warmup_frames: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=5, description="Frames per video used only to learn the background (no detections)."
    )

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return PREDICTIONS + [OutputDefinition(name="motion", kind=[BOOLEAN_KIND])]


class MotionDetectorBlockV1(WorkflowBlock):
    MAX_VIDEOS = 64  # background models kept; least recently seen video is dropped beyond this

    def __init__(self) -> None:
        self._subtractors: OrderedDict[str, list[Any]] = OrderedDict()  # video id -> [MOG2, frames seen]
        self._kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))

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
        self, images: WorkflowImageData, confidence: float, min_area: int, history: int, threshold: int, warmup_frames: int
    ) -> BlockResult:
        subtractor, seen = self._subtractor(images.video_metadata.video_identifier, history, threshold)
        mask = subtractor.apply(images.numpy_image)
        if seen <= warmup_frames:  # the first frames are all "foreground" to an empty background model
            return {"predictions": empty_detections_with_image_metadata(image=images), "motion": False}
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, self._kernel)
        mask = cv2.dilate(mask, self._kernel, iterations=2)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        rects = [cv2.boundingRect(c) for c in contours if cv2.contourArea(c) >= min_area]
        # Confidence: share of the box that actually moved, so a thin flicker scores low.
        conf = np.array(
            [min(1.0, cv2.countNonZero(mask[y : y + h, x : x + w]) / max(w * h, 1)) for x, y, w, h in rects],
            dtype=np.float32,
        )
        boxes = _xywh_to_xyxy(rects) if rects else np.zeros((0, 4), dtype=np.float32)
        detections = to_detections(images, boxes, conf, "motion", confidence)
        return {"predictions": detections, "motion": len(detections) > 0}


def load_blocks() -> list[type[WorkflowBlock]]:
    """Entry point of the Workflows plugin (WORKFLOWS_PLUGINS=bot.backends.builtin_blocks)."""
    return [HaarFaceDetectorBlockV1, HogPeopleDetectorBlockV1, MotionDetectorBlockV1]
