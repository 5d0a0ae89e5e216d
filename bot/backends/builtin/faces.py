"""OpenCV Haar frontal faces (model id builtin/faces)."""

from __future__ import annotations

import threading
from typing import Literal

import cv2
import numpy as np
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    BOOLEAN_KIND,
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
    is_video_frame,
    to_detections,
)
from bot.backends.builtin.motion_gate import Gates


class HaarFaceManifest(_DetectorManifest):
    type: Literal["vision_agent/haar_face_detector@v1"]
    model_config = ConfigDict(
        json_schema_extra=_schema_extra(
            "Haar Face Detector",
            "Detect frontal faces offline with OpenCV's Haar cascade (model id builtin/faces).",
            "Runs OpenCV's pre-trained frontal-face Haar cascade; needs no weights download or network. Outputs "
            "object-detection predictions with class `face`. Confidence grows with the number of overlapping raw "
            "hits (neighbours). Good for frontal faces in decent light; misses profiles. The cascade itself finds "
            "faces from about 24-32 px. With `min_size` under 24 (a sub-stream's faces: 12-14) it upscales the "
            "frame, at most to `upscale_side` px, so a small frame costs about what a main stream does and a big "
            "one is not upscaled. In video, `adaptive: true` treats a frame smaller than `upscale_side` as a "
            "sub-stream and searches it for faces down to 12 px that way (off by default: it also finds false faces "
            "on still texture, e.g. a tripod on a street camera in most frames).",
        )
    )
    scale_factor: Selector(kind=[FLOAT_KIND]) | float = Field(default=1.1, description="Image pyramid step (>1).")
    min_neighbors: Selector(kind=[INTEGER_KIND]) | int = Field(default=5, description="Hits needed to keep a face.")
    min_size: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=24, description="Smallest face side in pixels of the frame; under 24 the frame is upscaled (a "
                                "sub-stream's faces: 12-14; slower, and more false faces on detailed photos).")
    upscale_side: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=1280, description="Upscale for small faces only up to this longer side (the cost grows with it).")
    # The cascade's pyramid of integral images costs ~60 bytes per pixel: a 40 MP photo took 2.4 GB at full size.
    max_side: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=2048, description="Downscale the longer side to this first (min_size counts in the downscaled image)."
    )
    adaptive: Selector(kind=[BOOLEAN_KIND]) | bool = Field(
        default=False, description="In video: a frame smaller than upscale_side (a sub-stream) is searched for faces "
                                   "down to 12 px, upscaled at most to upscale_side (more false faces on texture).")


# The cascade's own 24 px window finds few faces that small. On scikit-image's LFW faces tiled into a 384x288 street
# frame (tests/bot/backends/test_faces_small.py), the cascade alone found none under 24 px, 13 of 35 at 24 px and 14
# of 20 at 32; upscaled so 12 px becomes 32 (x2.7): 26 of 100 at 12 px, 58 of 88 at 14, 57 of 70 at 16, 45 of 48 at
# 20, and at most one hit on LFW's non-faces. So a face of min_size px (when under the window) is upscaled to this.
RELIABLE_FACE_PX = 32.0
CASCADE_WINDOW = 24  # px: haarcascade_frontalface_default's window; no smaller minSize means anything
# A camera's sub-stream shows the main stream's faces a half to a quarter as big: 24 px faces become 6-12 px. In
# video the smallest face sought on a frame under upscale_side is this (what upscaling still finds, see above).
SUBSTREAM_FACE_PX = 12


class HaarFaceDetectorBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        # One cascade per block instance: detectMultiScale on a shared instance is not safe across threads.
        self._cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
        self._lock = threading.Lock()
        self._gates = Gates()

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return HaarFaceManifest

    def run(
        self, images: WorkflowImageData, confidence: float, scale_factor: float, min_neighbors: int, min_size: int,
        max_side: int, upscale_side: int = 1280, motion_gate: bool = True, adaptive: bool = False,
    ) -> BlockResult:
        repeated = self._gates.repeat(images) if motion_gate else None
        if repeated is not None:  # nothing moved since the last run: the same faces
            return {"predictions": to_detections(images, repeated[0], repeated[1], "face")}
        gray = cv2.cvtColor(images.numpy_image, cv2.COLOR_BGR2GRAY)
        if adaptive and is_video_frame(images):
            min_size = video_min_size(max(gray.shape[:2]), min_size, upscale_side)
        scale = face_scale(max(gray.shape[:2]), min_size, max_side, upscale_side)
        if scale != 1.0:
            interp = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
            gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=interp)
        smallest = max(CASCADE_WINDOW, round(max(int(min_size), 1) * max(scale, 1.0)))
        with self._lock:
            rects, neighbours = self._cascade.detectMultiScale2(
                gray, scaleFactor=max(float(scale_factor), 1.01), minNeighbors=min_neighbors,
                minSize=(smallest, smallest),
            )
        hits = np.asarray(neighbours, dtype=np.float32).reshape(-1)
        # Map neighbour count to (0, 1): min_neighbors hits -> ~0.33, 4x that -> ~0.8.
        conf = hits / (hits + 2.0 * max(int(min_neighbors), 1))
        boxes = _xywh_to_xyxy(rects) / scale
        keep = conf >= confidence
        if motion_gate:
            self._gates.found(images, (boxes[keep], conf[keep]))
        return {"predictions": to_detections(images, boxes, conf, "face", confidence)}


def video_min_size(longest: int, min_size: int, upscale_side: int) -> int:
    """The smallest face to seek in a video frame: SUBSTREAM_FACE_PX on a frame smaller than upscale_side (a
    sub-stream, whose faces are small), else min_size; never larger than what was asked."""
    if longest >= min(max(int(upscale_side), 64), 8192):
        return int(min_size)
    return min(int(min_size), SUBSTREAM_FACE_PX)


def face_scale(longest: int, min_size: int, max_side: int, upscale_side: int) -> float:
    """How much to resize a frame whose longer side is `longest`: down to max_side (memory), else up until a face
    of min_size px is RELIABLE_FACE_PX, but never past upscale_side (specs are untrusted: both sides are clamped)."""
    max_side = min(max(int(max_side), 64), 8192)
    if longest > max_side:
        return max_side / longest
    if int(min_size) >= CASCADE_WINDOW:
        return 1.0  # the cascade's own sizes: as it always ran (upscaling found 3 "faces" on the astronaut photo)
    up = RELIABLE_FACE_PX / max(int(min_size), 1)
    room = min(max(int(upscale_side), 64), max_side) / longest
    return float(max(1.0, min(up, room)))
