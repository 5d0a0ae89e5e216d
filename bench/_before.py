"""The builtin detectors as they were before the detection-quality work (commit de9310e), kept for side-by-side runs."""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np


class HogBefore:
    """builtin/people before: image shrunk to 640 px, winStride 8, scale 1.05, loose window boxes, conf >= 0.3."""

    def __init__(self) -> None:
        self.hog = cv2.HOGDescriptor()
        self.hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())

    def __call__(self, frame: Any) -> list[tuple[float, float, float, float]]:
        import supervision as sv

        scale = min(1.0, 640.0 / max(frame.shape[:2]))
        small = cv2.resize(frame, None, fx=scale, fy=scale) if scale < 1.0 else frame
        rects, weights = self.hog.detectMultiScale(small, winStride=(8, 8), padding=(8, 8), scale=1.05)
        boxes = np.asarray(rects, dtype=np.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        boxes /= scale
        conf = np.array([1.0 / (1.0 + math.exp(-2.0 * float(w))) for w in np.asarray(weights).reshape(-1)])
        keep = conf >= 0.3
        detections = sv.Detections(xyxy=boxes[keep], confidence=conf[keep], class_id=np.zeros(int(keep.sum()), int))
        if len(detections) > 1:
            detections = detections.with_nms(threshold=0.45)
        return [tuple(b) for b in detections.xyxy]


class HaarBefore:
    """builtin/faces before: frontal-face cascade, scaleFactor 1.1, minNeighbors 5, minSize 24, every hit kept."""

    def __init__(self) -> None:
        self.cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")

    def __call__(self, frame: Any) -> list[tuple[float, float, float, float]]:
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        rects, _ = self.cascade.detectMultiScale2(gray, scaleFactor=1.1, minNeighbors=5, minSize=(24, 24))
        return [(float(x), float(y), float(x + w), float(y + h)) for x, y, w, h in np.asarray(rects).reshape(-1, 4)]
