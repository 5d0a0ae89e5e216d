"""Counting defaults: line counters get an anchor (feet for people), byte trackers the low-fps CCTV settings."""

from __future__ import annotations

from bot.backends.counting import TRACKER_SETTINGS, with_counting_defaults
from bot.backends.workflows import detection_workflow


def _steps(spec: dict) -> dict:
    return {s["name"]: s for s in spec["steps"]}


def _composed(detector: str, **counter: object) -> dict:
    return {
        "version": "1.0",
        "inputs": [{"type": "WorkflowImage", "name": "image"}],
        "steps": [
            {"type": detector, "name": "det", "images": "$inputs.image"},
            {"type": "roboflow_core/detections_filter@v1", "name": "only", "predictions": "$steps.det.predictions",
             "operations": []},
            {"type": "roboflow_core/byte_tracker@v3", "name": "trk", "image": "$inputs.image",
             "detections": "$steps.only.predictions", "lost_track_buffer": 5},
            {"type": "roboflow_core/line_counter@v2", "name": "count", "image": "$inputs.image",
             "detections": "$steps.trk.tracked_detections", "line_segment": [[0, 0], [0, 9]], **counter},
        ],
        "outputs": [],
    }


def test_line_workflow_counts_people_by_their_feet_and_faces_by_their_centre():
    people = _steps(detection_workflow("builtin/people", line=[[320, 0], [320, 480]]))
    faces = _steps(detection_workflow("builtin/faces", line=[[320, 0], [320, 480]]))
    assert people["line_counter"]["triggering_anchor"] == "BOTTOM_CENTER"
    assert faces["line_counter"]["triggering_anchor"] == "CENTER"
    assert {k: people["tracker"][k] for k in TRACKER_SETTINGS} == TRACKER_SETTINGS


def test_composed_spec_gets_the_anchor_of_the_detector_it_traces_back_to_through_filter_and_tracker():
    people = _steps(with_counting_defaults(_composed("vision_agent/hog_people_detector@v1")))
    other = _steps(with_counting_defaults(_composed("roboflow_core/roboflow_object_detection_model@v2")))
    assert people["count"]["triggering_anchor"] == "BOTTOM_CENTER"
    assert other["count"]["triggering_anchor"] == "CENTER"


def test_what_a_spec_sets_itself_is_kept_and_the_original_is_not_changed():
    spec = _composed("vision_agent/hog_people_detector@v1", triggering_anchor="TOP_CENTER")
    out = _steps(with_counting_defaults(spec))
    assert out["count"]["triggering_anchor"] == "TOP_CENTER"
    assert out["trk"]["lost_track_buffer"] == 5  # the spec's own value
    assert out["trk"]["minimum_matching_threshold"] == TRACKER_SETTINGS["minimum_matching_threshold"]
    assert "minimum_matching_threshold" not in _steps(spec)["trk"]


def test_anything_not_a_workflow_passes_through_for_the_checks_to_reject():
    for junk in (None, "steps", {"steps": "x"}, {"steps": [1, None, {"type": 3}]}):
        assert with_counting_defaults(junk) is junk
