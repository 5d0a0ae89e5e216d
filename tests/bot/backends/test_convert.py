"""Conversion at the boundary: server JSON and supervision objects → one InferenceResult."""

from __future__ import annotations

import base64
import subprocess
import sys

import cv2
import numpy as np
import supervision as sv

from bot.backends.convert import (
    detections_from_sv,
    from_model_response,
    from_serialized_output,
)
from bot.redaction import redact


def jpeg_b64(image) -> str:
    return base64.b64encode(cv2.imencode(".jpg", image)[1].tobytes()).decode()


def test_server_output_detections_values_and_frame():
    frame = np.full((100, 200, 3), 90, np.uint8)
    output = {
        "predictions": {
            "image": {"width": 200, "height": 100},
            "predictions": [
                {"x": 50, "y": 40, "width": 20, "height": 10, "class": "face", "confidence": 0.9, "tracker_id": 7}
            ],
        },
        "count_in": 3,
        "annotated": {"type": "base64", "value": jpeg_b64(frame)},
        "huge": list(range(5000)),
    }
    result = from_serialized_output(output)
    (det,) = result.detections
    assert det.class_name == "face" and det.xyxy == (40.0, 35.0, 60.0, 45.0) and det.tracker_id == 7
    assert result.values == {"count_in": 3}  # large values are dropped, images never become values
    assert result.image_size == (200, 100) and result.frame[:2] == b"\xff\xd8"


def test_secondary_detection_outputs_become_counts():
    output = {
        "predictions": {"image": {}, "predictions": [{"x": 1, "y": 1, "width": 2, "height": 2, "class": "a"}]},
        "detections_in": {"image": {}, "predictions": [{"x": 1, "y": 1, "width": 2, "height": 2, "class": "a", "tracker_id": 4}]},
    }
    result = from_serialized_output(output)
    assert len(result.detections) == 1 and result.values["detections_in"] == {"count": 1, "tracker_ids": [4]}


def test_plain_model_response_is_drawn_and_downscaled():
    source = np.zeros((800, 1600, 3), np.uint8)
    response = {"predictions": [{"x": 800, "y": 400, "width": 200, "height": 200, "class": "car", "confidence": 0.5}]}
    result = from_model_response(response, source, max_dimension=640)
    frame = cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)
    assert frame.shape[:2] == (320, 640) and frame.max() > 0  # a box was drawn on the black frame
    assert result.image_size == (1600, 800) and result.counts() == {"car": 1}


def test_supervision_detections_keep_class_names_and_tracker_ids():
    det = sv.Detections(
        xyxy=np.array([[1, 2, 3, 4]], dtype=float),
        confidence=np.array([0.5]),
        class_id=np.array([0]),
        tracker_id=np.array([9]),
        data={"class_name": np.array(["person"])},
    )
    (d,) = detections_from_sv(det)
    assert (d.class_name, d.confidence, d.xyxy, d.tracker_id) == ("person", 0.5, (1.0, 2.0, 3.0, 4.0), 9)


def test_credentials_are_redacted():
    assert redact("rtsp://admin:pa55@10.0.0.2:554/s1") == "rtsp://admin:***@10.0.0.2:554/s1"
    assert redact("rtsp://token@cam.local/s") == "rtsp://***@cam.local/s"
    assert redact("/videos/a.mp4") == "/videos/a.mp4"


def test_backends_import_without_loading_inference():
    code = (
        "import sys, bot.backends, bot.backends.direct, bot.backends.http, bot.backends.workflows;"
        "heavy = [m for m in ('inference', 'cv2', 'supervision', 'torch') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_in_process_values_become_plain_json():
    import json
    from datetime import datetime

    from bot.backends.convert import from_workflow_output

    det = sv.Detections(xyxy=np.array([[0, 0, 4, 4]], dtype=float), class_id=np.array([0]), data={"class_name": np.array(["x"])})
    output = {
        "count_in": np.int64(2),
        "per_zone": [det, det],
        "when": datetime(2026, 1, 2, 3, 4, 5),
        "scores": np.array([0.5, 0.25]),
    }
    result = from_workflow_output(output)
    assert result.values == {
        "count_in": 2, "per_zone": [{"count": 1}, {"count": 1}], "when": "2026-01-02T03:04:05", "scores": [0.5, 0.25]
    }
    json.dumps(result.values)  # everything downstream may serialize it
