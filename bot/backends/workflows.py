"""Workflow specs: wrap a model id into a detection workflow, and refuse specs that would run user code."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from bot.backends.base import BackendError

BUILTIN_MODELS: dict[str, str] = {
    "builtin/faces": "vision_agent/haar_face_detector@v1",
    "builtin/people": "vision_agent/hog_people_detector@v1",
    "builtin/motion": "vision_agent/motion_detector@v1",
}
BUILTIN_DESCRIPTIONS: dict[str, str] = {
    "builtin/faces": "frontal faces (OpenCV Haar cascade, offline), class `face`",
    "builtin/people": "standing people (OpenCV HOG, offline), class `person`",
    "builtin/motion": "moving regions in video (background subtraction, offline), class `motion`",
}
ROBOFLOW_OD_BLOCK = "roboflow_core/roboflow_object_detection_model@v2"
# `project/version`, `workspace/project/version`, or a public alias such as `yolov8n-640`.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+){0,2}$")
ENABLE_CUSTOM_PYTHON_HINT = (
    "custom Python blocks run code from the spec and are disabled; to allow them set "
    "`inference: {allow_custom_python: true}` in the workspace config.yaml"
)


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
) -> dict[str, Any]:
    """A workflow spec running model_id on `$inputs.image`, optionally tracked, line-counted and annotated.

    Outputs: `predictions` (tracked if track), `annotated` (if annotate), `count_in`/`count_out` (if line).
    A line (two [x, y] points) needs tracking, so it turns track on.
    """
    detector: dict[str, Any] = {"type": model_block(model_id), "name": "detector", "images": "$inputs.image"}
    if detector["type"] == ROBOFLOW_OD_BLOCK:
        detector["model_id"] = roboflow_model_id(model_id)
    if confidence is not None:
        detector["confidence"] = float(confidence)
    steps: list[dict[str, Any]] = [detector]
    predictions = "$steps.detector.predictions"
    track = track or line is not None
    if track:
        steps.append(
            {"type": "roboflow_core/byte_tracker@v3", "name": "tracker", "image": "$inputs.image", "detections": predictions}
        )
        predictions = "$steps.tracker.tracked_detections"
    outputs = [{"type": "JsonField", "name": "predictions", "selector": predictions}]
    if line is not None:
        line = _check_line(line)
        steps.append(
            {
                "type": "roboflow_core/line_counter@v2",
                "name": "line_counter",
                "image": "$inputs.image",
                "detections": predictions,
                "line_segment": line,
            }
        )
        for key in ("count_in", "count_out"):
            outputs.append({"type": "JsonField", "name": key, "selector": f"$steps.line_counter.{key}"})
    if annotate:
        steps.extend(_annotation_steps(predictions, track, line))
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


def _annotation_steps(predictions: str, track: bool, line: list[list[int]] | None) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {
            "type": "roboflow_core/bounding_box_visualization@v1",
            "name": "boxes",
            "image": "$inputs.image",
            "predictions": predictions,
        },
        {
            "type": "roboflow_core/label_visualization@v1",
            "name": "labels",
            "image": "$steps.boxes.image",
            "predictions": predictions,
            "text": "Tracker Id" if track else "Class and Confidence",
        },
    ]
    if line is not None:
        steps.append(
            {
                "type": "roboflow_core/line_counter_visualization@v1",
                "name": "line",
                "image": "$steps.labels.image",
                "zone": line,
                "count_in": "$steps.line_counter.count_in",
                "count_out": "$steps.line_counter.count_out",
            }
        )
    return steps


def check_spec(spec: Any, allow_custom_python: bool) -> list[str]:
    """Safety problems with a workflow spec (empty = fine to compile). Looks into inner workflows too."""
    if not isinstance(spec, dict):
        return ["a workflow specification must be a JSON object with `version`, `inputs`, `steps`, `outputs`"]
    problems: list[str] = []
    if not allow_custom_python:
        _find_custom_python(spec, "specification", problems)
    return problems


def _find_custom_python(node: Any, where: str, problems: list[str]) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _find_custom_python(item, f"{where}[{i}]", problems)
        return
    if not isinstance(node, dict):
        return
    dynamic = node.get("dynamic_blocks_definitions")
    if dynamic:
        names = [str((d.get("manifest") or {}).get("block_type", "?")) for d in dynamic if isinstance(d, dict)]
        problems.append(f"{where}: defines custom Python block(s) {', '.join(names) or '?'}: {ENABLE_CUSTOM_PYTHON_HINT}")
    for key, value in node.items():
        if key != "dynamic_blocks_definitions":
            _find_custom_python(value, f"{where}.{key}", problems)


def spec_hash(spec: dict[str, Any]) -> str:
    """A stable key for a spec (for caching compiled engines)."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def describe_spec(spec: dict[str, Any]) -> str:
    """A short human-readable summary: the step types in order."""
    steps = spec.get("steps") or []
    kinds = [str(s.get("type", "?")).split("/")[-1].split("@")[0] for s in steps if isinstance(s, dict)]
    models = [s.get("model_id") for s in steps if isinstance(s, dict) and s.get("model_id")]
    text = " → ".join(kinds) or "empty workflow"
    return f"{text} ({', '.join(map(str, models))})" if models else text
