"""Workflow specs: wrap a model id into a detection workflow; hash and describe specs (safety: bot/backends/policy)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from bot.backends.base import BackendError
from bot.backends.counting import (
    FRAME_SCALE_BLOCK,
    LABELS_BLOCK,
    LINE_COUNTER_BLOCK,
    LINE_OVERLAY_BLOCK,
    PEOPLE_DETECTORS,
    TRACKER_BLOCK,
    anchor_for,
    tracker_step,
)
from bot.backends.orientation import ORIENT_BLOCK, ORIENTATION_OUTPUT, Orientation

BUILTIN_MODELS: dict[str, str] = {
    "builtin/faces": "vision_agent/haar_face_detector@v1",
    "builtin/people": "vision_agent/hog_people_detector@v1",
    "builtin/motion": "vision_agent/motion_detector@v1",
}
BUILTIN_DESCRIPTIONS: dict[str, str] = {
    "builtin/faces": "frontal faces from ~24-32 px (OpenCV Haar cascade, offline; a sub-stream's 12-16 px faces "
                     "need the main stream, a Roboflow model, or a face step with `adaptive: true`), class `face`",
    "builtin/people": "standing people (OpenCV HOG, offline), class `person`",
    "builtin/motion": "moving regions in video (background subtraction, offline), class `motion`",
}
BUILTIN_CLASSES: dict[str, tuple[str, ...]] = {  # what each builtin detector can ever report (a rule names one)
    "builtin/faces": ("face",), "builtin/people": ("person",), "builtin/motion": ("motion",),
}
ROBOFLOW_OD_BLOCK = "roboflow_core/roboflow_object_detection_model@v2"
# Outputs that measure the camera for bot/pipelines/limits.py, not what is seen: summaries leave them out.
CONDITIONS = ("camera", "tracking", ORIENTATION_OUTPUT)
# `project/version`, `workspace/project/version`, or a public alias such as `yolov8n-640`.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+){0,2}$")


def is_builtin(model_id: str) -> bool:
    return model_id in BUILTIN_MODELS


def model_block(model_id: str) -> str:
    """The block type that runs model_id; BackendError for ids that cannot be a model."""
    model_id = model_id.strip()
    if model_id.startswith("builtin/"):
        if model_id not in BUILTIN_MODELS:
            raise BackendError(f"unknown builtin model {model_id!r}: use one of {', '.join(BUILTIN_MODELS)}")
        return BUILTIN_MODELS[model_id]
    if not _MODEL_ID.match(model_id):
        raise BackendError(
            f"{model_id!r} is not a model id: use `workspace/project/version`, `project/version` or builtin/faces"
        )
    return ROBOFLOW_OD_BLOCK


def roboflow_model_id(model_id: str) -> str:
    """Roboflow serves `project/version`; the workspace part of `workspace/project/version` comes from the key."""
    parts = model_id.strip().split("/")
    return "/".join(parts[-2:]) if len(parts) == 3 else model_id.strip()


def detection_workflow(
    model_id: str,
    confidence: float | None = None,
    track: bool = True,
    annotate: bool = True,
    line: list[list[int]] | None = None,
    zone: list[list[int]] | None = None,
    anchor: str | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A workflow spec running model_id on `$inputs.image`, optionally tracked, timed in a zone, line-counted, annotated.

    Outputs: `predictions` (tracked if track; with each object's seconds in the zone if zone), `annotated` (if
    annotate), `count_in`/`count_out` (if line). A line (two [x, y] points) or a zone (a polygon of 3+ points)
    needs tracking, so either turns track on.
    """
    detector: dict[str, Any] = {"type": model_block(model_id), "name": "detector", "images": "$inputs.image"}
    if detector["type"] == ROBOFLOW_OD_BLOCK:
        detector["model_id"] = roboflow_model_id(model_id)
    if confidence is not None:
        detector["confidence"] = float(confidence)
    detector.update(settings or {})  # the detector block's own fields (builtin/people's min_height)
    steps: list[dict[str, Any]] = [detector]
    predictions = "$steps.detector.predictions"
    track = track or line is not None or zone is not None
    if track:
        steps.append(tracker_step(predictions, detector_type=detector["type"]))
        predictions = "$steps.tracker.tracked_detections"
    if zone is not None:
        zone = check_zone(zone)
        steps.append(_zone_step(predictions, zone))
        predictions = "$steps.zone.timed_detections"
    outputs = [{"type": "JsonField", "name": "predictions", "selector": predictions}]
    if detector["type"] in PEOPLE_DETECTORS:  # what it measures of the camera: bot/pipelines/limits.py reads it
        outputs.append({"type": "JsonField", "name": "camera", "selector": "$steps.detector.camera"})
    if track and steps[1]["type"] == TRACKER_BLOCK:
        outputs.append({"type": "JsonField", "name": "tracking", "selector": "$steps.tracker.tracking"})
    if line is not None:
        line = _check_line(line)
        steps.append(
            {
                "type": LINE_COUNTER_BLOCK,
                "name": "line_counter",
                "image": "$inputs.image",
                "detections": predictions,
                "line_segment": line,
                "triggering_anchor": anchor or anchor_for(detector["type"]),  # the point whose crossing counts
            }
        )
        for key in ("count_in", "count_out"):
            outputs.append({"type": "JsonField", "name": key, "selector": f"$steps.line_counter.{key}"})
    if annotate:
        steps.extend(_annotation_steps(predictions, track, line, zone))
        outputs.append({"type": "JsonField", "name": "annotated", "selector": f"$steps.{steps[-1]['name']}.image"})
    return {
        "version": "1.0",
        "inputs": [{"type": "WorkflowImage", "name": "image"}],
        "steps": steps,
        "outputs": outputs,
    }


def _check_line(line: Any) -> list[list[int]]:
    try:
        points = [[int(p[0]), int(p[1])] for p in line]
    except (TypeError, ValueError, IndexError):
        points = []
    if len(points) != 2:
        raise BackendError("a counting line is two points [[x1, y1], [x2, y2]] in pixels")
    return points


def check_zone(zone: Any) -> list[list[int]]:
    """A zone as [[x, y], ...] ints with at least 3 points; BackendError (one line) otherwise."""
    try:
        points = [[int(p[0]), int(p[1])] for p in zone]
    except (TypeError, ValueError, IndexError):
        points = []
    if len(points) < 3 or len({(x, y) for x, y in points}) < 3:
        raise BackendError("a zone is a polygon of at least 3 different points [[x1, y1], [x2, y2], [x3, y3], ...] in pixels")
    return points


def _zone_step(predictions: str, zone: list[list[int]]) -> dict[str, Any]:
    # All objects stay in `predictions` (counts, line, alerts see everyone); those outside the zone carry 0 s.
    return {"type": "roboflow_core/time_in_zone@v3", "name": "zone", "image": "$inputs.image",
            "detections": predictions, "zone": zone, "triggering_anchor": "CENTER",
            "remove_out_of_zone_detections": False, "reset_out_of_zone_detections": True}


def _annotation_steps(
    predictions: str, track: bool, line: list[list[int]] | None, zone: list[list[int]] | None
) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    image = "$inputs.image"
    if zone is not None:  # first, so boxes and labels are drawn over the zone's tint
        steps.append({"type": "roboflow_core/polygon_zone_visualization@v1", "name": "zone_area", "image": image,
                      "zone": zone})
        image = "$steps.zone_area.image"
    if line is not None:  # under the boxes and labels, so the line never hides what they say
        steps += _line_steps(line, image, predictions)
        image = "$steps.line.image"
    # Box lines from the frame's width: one fixed thickness was a hairline at 1920 px and heavy at 320 px.
    # Labels by our block: sized the same way, and kept whole inside the frame (label_visualization cuts them off).
    steps += [
        {"type": FRAME_SCALE_BLOCK, "name": "sizes", "image": "$inputs.image"},
        {"type": "roboflow_core/bounding_box_visualization@v1", "name": "boxes", "image": image, "predictions": predictions,
         "thickness": "$steps.sizes.thickness"},
        # "person 0.87 #12": what it is, how sure, and the id alerts name it by (when tracked)
        {"type": LABELS_BLOCK, "name": "labels", "image": "$steps.boxes.image", "predictions": predictions},
    ]
    return steps


def _line_steps(line: list[list[int]], image: str, predictions: str) -> list[dict[str, Any]]:
    """The counting line and its in/out counts, drawn by our block so they stand out on any frame.

    roboflow_core/line_counter_visualization blends its colour onto the picture (faint on white, nothing on
    black) and draws a fixed-size label centred on the line's first point, half off a line from the edge. Ours
    puts the in/out box where it hides least of the line and of the detections (`predictions`).
    """
    return [{"type": LINE_OVERLAY_BLOCK, "name": "line", "image": image, "line_segment": line,
             "count_in": "$steps.line_counter.count_in", "count_out": "$steps.line_counter.count_out",
             "predictions": predictions}]


def spec_hash(spec: dict[str, Any]) -> str:
    """A stable key for a spec (for caching compiled engines)."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def describe_spec(spec: dict[str, Any]) -> str:
    """What a spec runs, for people: 'model builtin/people, tracker, counting line (384,0)→(384,576)'.

    Drawing steps are left out (every pipeline draws its frames), models are named as a user gives them.
    """
    parts: list[str] = []
    for step, kind in spec_steps(spec):
        if kind.endswith("_visualization") or step.get("type") in (LINE_OVERLAY_BLOCK, FRAME_SCALE_BLOCK, LABELS_BLOCK):
            continue
        part = _describe_step(step, kind)
        if not parts or parts[-1] != part:
            parts.append(part)
    return ", ".join(parts) or "empty workflow"


def spec_steps(spec: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """A spec's steps with their kinds ('roboflow_core/line_counter@v1' -> 'line_counter'); a saved or stored spec
    is untrusted JSON: what is not a step is skipped."""
    steps = spec.get("steps") if isinstance(spec, dict) else None
    for step in steps if isinstance(steps, list) else ():
        if isinstance(step, dict):
            yield step, str(step.get("type", "?")).split("/")[-1].split("@")[0]


_BUILTIN_OF_BLOCK = {block: model for model, block in BUILTIN_MODELS.items()}


def _describe_step(step: dict[str, Any], kind: str) -> str:
    if step.get("type") == ORIENT_BLOCK:  # a turned camera's setting (bot/backends/orientation.py)
        try:
            return Orientation.of(int(step.get("rotate") or 0), step.get("flip")).describe() or "frames as they come"
        except (TypeError, ValueError):
            return "frames turned"
    if step.get("type") in _BUILTIN_OF_BLOCK:
        return f"model {_BUILTIN_OF_BLOCK[step['type']]}"
    if step.get("model_id"):
        return f"model {step['model_id']}"
    points = step.get("line_segment") if "line_counter" in kind else step.get("zone") if "zone" in kind else None
    if isinstance(points, list) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in points):
        where = "→".join(f"({p[0]},{p[1]})" for p in points)
        return f"counting line {where}" if "line_counter" in kind else f"timing a {len(points)}-point zone"
    return kind.replace("_", " ")
