"""Backend images (BGR numpy arrays): decoded under the pixel limit, detections drawn, encoded as the JPEG frames
every InferenceResult carries. OpenCV and supervision are imported on use: they take a while to load."""

from __future__ import annotations

import zlib
from typing import Any

from bot.backends.base import Detection
from bot.media.sniff import DEFAULT_MAX_PIXELS, ImageRejected, TooManyPixels, check_image

JPEG_QUALITY = 85


def encode_jpeg(image: Any, max_dimension: int | None = None, max_pixels: int = DEFAULT_MAX_PIXELS) -> bytes:
    """BGR numpy image → JPEG bytes, downscaled so the longer side is at most max_dimension and within max_pixels."""
    import cv2

    height, width = image.shape[:2]
    scale = min(1.0, (max_pixels / max(1, height * width)) ** 0.5)
    if max_dimension:
        scale = min(scale, max_dimension / max(height, width))
    if scale < 1.0:
        image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise ValueError("could not encode the frame as JPEG")
    return buf.tobytes()


def decode_image(data: bytes, max_pixels: int | None = None) -> Any:
    """Image file bytes → BGR numpy image, or None if not an image OpenCV can read.

    Raises TooManyPixels (a ValueError, one line) for an image over max_pixels (None: PIL's decompression-bomb
    limit), found from the header before OpenCV allocates anything.
    """
    import cv2
    import numpy as np

    try:
        check_image(data, max_pixels)
    except TooManyPixels:
        raise
    except ImageRejected:
        return None
    arr = np.frombuffer(data, dtype=np.uint8)
    return cv2.imdecode(arr, cv2.IMREAD_COLOR) if arr.size else None


def draw_detections(image: Any, detections: tuple[Detection, ...]) -> Any:
    """Boxes and labels drawn on a copy of a BGR image; the labels as the workflows' (vision_agent/labels@v1):
    "person 0.87 #12", whole inside the frame, sized to it."""
    import numpy as np
    import supervision as sv

    from bot.backends.builtin.label_drawing import draw_labels, label_text  # supervision: imported on use

    if not detections:
        return image.copy()
    sv_det = sv.Detections(
        xyxy=np.array([d.xyxy for d in detections], dtype=np.float32),
        confidence=np.array([d.confidence for d in detections], dtype=np.float32),
        class_id=np.array([zlib.crc32(d.class_name.encode()) % 997 for d in detections]),  # same colour every run
    )
    labels = [label_text(d.class_name, d.confidence, d.tracker_id) for d in detections]
    out = sv.BoxAnnotator().annotate(scene=image.copy(), detections=sv_det)
    return draw_labels(out, sv_det, labels)
