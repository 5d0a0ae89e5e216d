"""Model id → workflow wrapping and the spec safety checks (pure functions, no inference import)."""

from __future__ import annotations

import pytest

from bot.backends.base import BackendError
from bot.backends.workflows import (
    ROBOFLOW_OD_BLOCK,
    check_spec,
    describe_spec,
    detection_workflow,
    model_block,
    roboflow_model_id,
    spec_hash,
)


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
    assert outputs["count_in"] == "$steps.line_counter.count_in" and outputs["annotated"] == "$steps.line.image"
    assert steps["labels"]["text"] == "Tracker Id"
    with pytest.raises(BackendError, match="two points"):
        detection_workflow("builtin/faces", line=[[1, 2]])


def test_single_image_workflow_labels_class_and_confidence():
    spec = detection_workflow("builtin/faces", track=False)
    assert "tracker" not in steps_by_name(spec)
    assert steps_by_name(spec)["labels"]["text"] == "Class and Confidence"
    assert describe_spec(spec) == "haar_face_detector → bounding_box_visualization → label_visualization"


def test_custom_python_refused_anywhere_including_inner_workflows():
    inner = detection_workflow("builtin/faces", track=False)
    inner["dynamic_blocks_definitions"] = [{"manifest": {"block_type": "Sneaky"}, "code": {"run_function_code": "x"}}]
    outer = detection_workflow("builtin/faces", track=False)
    outer["steps"].append({"type": "roboflow_core/inner_workflow@v1", "name": "nested", "workflow_definition": inner})
    problems = check_spec(outer, allow_custom_python=False)
    assert len(problems) == 1 and "Sneaky" in problems[0] and "allow_custom_python: true" in problems[0]
    assert check_spec(outer, allow_custom_python=True) == []
    assert check_spec(detection_workflow("builtin/faces"), allow_custom_python=False) == []
    assert check_spec(["not", "a", "spec"], allow_custom_python=True)


def test_spec_hash_ignores_key_order():
    a = {"version": "1.0", "steps": [], "inputs": [], "outputs": []}
    b = {"outputs": [], "inputs": [], "steps": [], "version": "1.0"}
    assert spec_hash(a) == spec_hash(b) != spec_hash({**a, "version": "1.1"})
