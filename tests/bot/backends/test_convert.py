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
    from_workflow_output,
)
from bot.media.redaction import redact


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
        "import sys, bot.backends, bot.backends.direct.backend, bot.backends.http.backend, bot.backends.workflows;"
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


def _time_in_zone_outputs(seconds_apart: float = 12.0) -> tuple[sv.Detections, dict]:
    """inference's own time_in_zone block (v3) on two frames of a 10 fps video: its in-process and JSON outputs."""
    from datetime import datetime

    # inference installs the process's workflows settings when inference.core is imported; importing a
    # roboflow_workflows module first would freeze the library's permissive defaults for every later test in
    # this process (a pytest-xdist worker may run this file first).
    import inference.core  # noqa: F401
    from roboflow_workflows.core_steps.analytics.time_in_zone.v3 import TimeInZoneBlockV3
    from roboflow_workflows.core_steps.common.serializers import serialise_sv_detections
    from roboflow_workflows.execution_engine.entities.base import (
        ImageParentMetadata,
        VideoMetadata,
        WorkflowImageData,
    )

    block = TimeInZoneBlockV3()
    dets = sv.Detections(xyxy=np.array([[10, 10, 50, 50], [300, 300, 340, 340]], dtype=float),
                         confidence=np.array([0.9, 0.8]), class_id=np.array([0, 0]),
                         tracker_id=np.array([45, 7]), data={"class_name": np.array(["person", "person"])})
    dets["detection_id"] = np.array(["a", "b"])
    out = None
    for frame in (0, int(seconds_apart * 10)):
        meta = VideoMetadata(video_identifier="street", frame_number=frame, frame_timestamp=datetime.now(), fps=10,
                             comes_from_video_file=True)
        image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="f"),
                                  numpy_image=np.zeros((400, 400, 3), np.uint8), video_metadata=meta)
        out = block.run(image, dets, [[0, 0], [100, 0], [100, 100], [0, 100]], "CENTER", False, True)
    timed = out["timed_detections"]
    return timed, serialise_sv_detections(timed)  # what the inference server sends: {"image": …, "predictions": […]}


def test_seconds_in_zone_survive_conversion_from_the_real_time_in_zone_block():
    timed, as_json = _time_in_zone_outputs(seconds_apart=12.0)
    for result in (from_workflow_output({"predictions": timed}), from_serialized_output({"predictions": as_json})):
        by_id = {d.tracker_id: d.time_in_zone for d in result.detections}
        assert by_id == {45: 12.0, 7: 0.0}  # #45 stayed 12 s inside; #7 is outside the zone (0 s, never its id)


def test_a_separate_zone_output_lends_its_seconds_to_the_main_detections():
    timed, _ = _time_in_zone_outputs(seconds_apart=3.5)
    tracked = sv.Detections(xyxy=timed.xyxy, confidence=timed.confidence, class_id=timed.class_id,
                            tracker_id=timed.tracker_id, data={"class_name": timed.data["class_name"]})
    result = from_workflow_output({"predictions": tracked, "zone": timed[timed.data["time_in_zone"] > 0]})
    assert {d.tracker_id: d.time_in_zone for d in result.detections} == {45: 3.5, 7: None}
    assert result.values["zone"] == {"count": 1, "tracker_ids": [45]}


def test_a_server_image_over_the_bomb_limit_is_no_frame_not_a_failure(png_bomb):
    output = {"count_in": 2, "annotated": {"type": "base64", "value": base64.b64encode(png_bomb).decode()}}
    result = from_serialized_output(output)
    assert result.values == {"count_in": 2} and result.frame is None


def test_saved_frames_keep_the_cameras_resolution_unless_capped():
    from bot.backends.imaging import encode_jpeg
    from bot.config import load_settings

    default_cap = load_settings({}).monitoring.result_image_max_dimension
    for width, height in [(320, 240), (768, 576), (1920, 1080)]:  # a sub-stream, the 768x576 that became 640x480, HD
        source = np.full((height, width, 3), 120, np.uint8)
        result = from_serialized_output({"predictions": {"predictions": []}}, source, max_dimension=default_cap)
        frame = cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)
        assert frame.shape[:2] == (height, width) and result.image_size == (width, height)
    capped = cv2.imdecode(np.frombuffer(encode_jpeg(np.zeros((576, 768, 3), np.uint8), 640), np.uint8), 1)
    assert capped.shape[:2] == (480, 640)  # an operator's cap still applies
    over = cv2.imdecode(np.frombuffer(encode_jpeg(np.zeros((1080, 1920, 3), np.uint8), None, 500_000), np.uint8), 1)
    assert over.shape[0] * over.shape[1] <= 500_000 and abs(over.shape[1] / over.shape[0] - 16 / 9) < 0.01
