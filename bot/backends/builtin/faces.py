"""OpenCV Haar frontal faces (model id builtin/faces)."""

from __future__ import annotations

import threading
from typing import Literal

import cv2
import numpy as np
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    FLOAT_KIND,
    INTEGER_KIND,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.common import (
    _DetectorManifest,
    _schema_extra,
    _xywh_to_xyxy,
    to_detections,
)


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
    # The cascade's pyramid of integral images costs ~60 bytes per pixel: a 40 MP photo took 2.4 GB at full size.
    max_side: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=2048, description="Downscale the longer side to this first (min_size counts in the downscaled image)."
    )


class HaarFaceDetectorBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        # One cascade per block instance: detectMultiScale on a shared instance is not safe across threads.
        self._cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
        self._lock = threading.Lock()

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return HaarFaceManifest

    def run(
        self, images: WorkflowImageData, confidence: float, scale_factor: float, min_neighbors: int, min_size: int,
        max_side: int,
    ) -> BlockResult:
        gray = cv2.cvtColor(images.numpy_image, cv2.COLOR_BGR2GRAY)
        scale = min(1.0, float(max_side) / max(gray.shape[:2]))
        if scale < 1.0:
            gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        with self._lock:
            rects, neighbours = self._cascade.detectMultiScale2(
                gray, scaleFactor=scale_factor, minNeighbors=min_neighbors, minSize=(min_size, min_size)
            )
        hits = np.asarray(neighbours, dtype=np.float32).reshape(-1)
        # Map neighbour count to (0, 1): min_neighbors hits -> ~0.33, 4x that -> ~0.8.
        conf = hits / (hits + 2.0 * max(int(min_neighbors), 1))
        return {"predictions": to_detections(images, _xywh_to_xyxy(rects) / scale, conf, "face", confidence)}
