"""Model id → workflow wrapping, spec hashing and description (pure functions, no inference import)."""

from __future__ import annotations

import pytest

from bot.backends.base import BackendError
from bot.backends.policy.check import check_spec
from bot.backends.workflows import (
    ROBOFLOW_OD_BLOCK,
    describe_spec,
    detection_workflow,
    model_block,
    roboflow_model_id,
    spec_hash,
)
from bot.config.settings import InferenceConfig


def steps_by_name(spec):
    return {s["name"]: s for s in spec["steps"]}


def test_builtin_ids_map_to_plugin_blocks():
    assert model_block("builtin/faces") == "vision_agent/haar_face_detector@v1"
    assert model_block("builtin/people") == "vision_agent/hog_people_detector@v1"
    assert model_block("builtin/motion") == "vision_agent/motion_detector@v1"
    with pytest.raises(BackendError, match="builtin/faces"):
        model_block("builtin/cats")


def test_roboflow_ids_use_the_standard_block_without_workspace():
    spec = detection_workflow("my-ws/hard-hats/3", confidence=0.4, track=False, annotate=False)
    det = steps_by_name(spec)["detector"]
    assert det["type"] == ROBOFLOW_OD_BLOCK and det["model_id"] == "hard-hats/3" and det["confidence"] == 0.4
    assert roboflow_model_id("hard-hats/3") == "hard-hats/3" and roboflow_model_id("yolov8n-640") == "yolov8n-640"
    assert [o["name"] for o in spec["outputs"]] == ["predictions"]
    with pytest.raises(BackendError, match="not a model id"):
        model_block("../../etc/passwd")


def test_line_adds_tracker_counter_and_counts_outputs():
    spec = detection_workflow("builtin/faces", track=False, line=[[320, 0], [320, 480]])
    steps = steps_by_name(spec)
    assert steps["line_counter"]["detections"] == "$steps.tracker.tracked_detections"  # a line forces tracking
    assert steps["line_counter"]["line_segment"] == [[320, 0], [320, 480]]
    outputs = {o["name"]: o["selector"] for o in spec["outputs"]}
    assert outputs["count_in"] == "$steps.line_counter.count_in" and outputs["annotated"] == "$steps.labels.image"
    assert steps["labels"]["type"] == "vision_agent/labels@v1"  # "face 0.87 #12", kept inside the frame
    assert steps["labels"]["predictions"] == "$steps.tracker.tracked_detections" and "ids" not in steps
    with pytest.raises(BackendError, match="two points"):
        detection_workflow("builtin/faces", line=[[1, 2]])


def test_zone_times_tracked_objects_and_keeps_everyone_in_predictions():
    spec = detection_workflow("builtin/people", track=False, zone=[[0, 0], [100, 0], [100, 80]])
    steps = steps_by_name(spec)
    assert steps["zone"]["type"] == "roboflow_core/time_in_zone@v3"
    assert steps["zone"]["detections"] == "$steps.tracker.tracked_detections"  # a zone forces tracking
    assert steps["zone"]["remove_out_of_zone_detections"] is False  # counts and alerts still see objects outside
    outputs = {o["name"]: o["selector"] for o in spec["outputs"]}
    assert outputs["predictions"] == "$steps.zone.timed_detections"
    assert steps["zone_area"]["zone"] == steps["zone"]["zone"]
    assert steps["labels"]["predictions"] == "$steps.zone.timed_detections"
    assert check_spec(spec, InferenceConfig()) == []  # every block it uses is on the allowlist
    for bad in ([[1, 2], [3, 4]], [[1, 1], [1, 1], [2, 2]], "0,0,1,1,2,2"):
        with pytest.raises(BackendError, match="at least 3 different points"):
            detection_workflow("builtin/people", zone=bad)


def test_the_whole_counted_line_is_drawn_by_our_overlay_with_the_counters_figures():
    line = [[320, 0], [320, 480]]
    spec = detection_workflow("builtin/people", line=line)
    drawn = [s for s in spec["steps"] if s["type"].endswith("_visualization@v1") and "line" in s["type"]]
    assert drawn == []  # line_counter_visualization blends its colour in: faint on white, nothing on black
    overlay = steps_by_name(spec)["line"]
    assert overlay["type"] == "vision_agent/line_overlay@v1" and overlay["line_segment"] == line
    assert overlay["count_in"] == "$steps.line_counter.count_in"
    assert steps_by_name(spec)["boxes"]["image"] == "$steps.line.image"  # labels drawn over the line, not under it
    assert {o["name"]: o["selector"] for o in spec["outputs"]}["annotated"] == "$steps.labels.image"
    assert check_spec(spec, InferenceConfig()) == []


def test_single_image_workflow_labels_class_and_confidence():
    spec = detection_workflow("builtin/faces", track=False)
    assert "tracker" not in steps_by_name(spec)
    assert steps_by_name(spec)["labels"] == {"type": "vision_agent/labels@v1", "name": "labels",
                                             "image": "$steps.boxes.image", "predictions": "$steps.detector.predictions"}
    assert not [s for s in spec["steps"] if "label_visualization" in s["type"]]  # its labels leave the frame
    assert describe_spec(spec) == "model builtin/faces"  # what it runs, not how it draws


def test_a_description_names_the_model_and_the_line_or_zone_once():
    spec = detection_workflow("builtin/people", line=[[384, 0], [384, 576]], zone=[[0, 0], [9, 0], [9, 9], [0, 9]])
    text = describe_spec(spec)
    assert text.startswith("model builtin/people") and text.count("counting line (384,0)→(384,576)") == 1
    assert "4-point zone" in text and "visualization" not in text
    assert describe_spec(detection_workflow("acme/boxes/3")) == "model boxes/3, byte tracker"


def test_spec_hash_ignores_key_order():
    a = {"version": "1.0", "steps": [], "inputs": [], "outputs": []}
    b = {"outputs": [], "inputs": [], "steps": [], "version": "1.0"}
    assert spec_hash(a) == spec_hash(b) != spec_hash({**a, "version": "1.1"})
