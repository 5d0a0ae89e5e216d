"""A pipeline's frames are drawn (boxes, labels, the counting line) only when someone reads them, and drawn as the
whole workflow draws them: the drawing steps run apart, on demand (bot/backends/deferred.py)."""

from __future__ import annotations

import datetime

import cv2
import numpy as np
import pytest

from bot.backends import deferred
from bot.backends.base import InferenceResult, LazyJpeg, WorkflowRef
from bot.backends.builtin.labels import LabelsBlockV1
from bot.backends.workflows import detection_workflow
from tests.bot.backends.test_frame_on_demand import STREET, _finished

LINE = [[120, 0], [120, 300]]  # crossing.mp4's counting line (tests/fixtures/data/crossing.json)


def test_the_drawing_steps_leave_the_workflow_and_their_inputs_become_its_outputs():
    spec = detection_workflow("builtin/people", line=LINE, zone=[[0, 0], [100, 0], [100, 200]])
    parts = deferred.split(spec)
    kinds = {s["type"] for s in parts.analysis["steps"]}
    assert not any(k.endswith("_visualization@v1") or k in ("vision_agent/labels@v1", "vision_agent/line_overlay@v1")
                   for k in kinds)
    assert "annotated" not in {o["name"] for o in parts.analysis["outputs"]}
    assert parts.drawing is not None and [o["name"] for o in parts.drawing["outputs"]] == ["annotated"]
    extra = {o["selector"] for o in parts.analysis["outputs"] if o["name"].startswith(deferred.DRAW_PREFIX)}
    assert extra == {"$steps.zone.timed_detections", "$steps.line_counter.count_in", "$steps.line_counter.count_out"}


def test_a_spec_whose_analysis_reads_a_drawing_is_kept_whole():
    spec = detection_workflow("builtin/people")
    spec["outputs"].append({"type": "JsonField", "name": "sizes", "selector": "$steps.sizes.thickness"})
    assert deferred.split(spec).drawing is None
    spec = detection_workflow("builtin/people")
    spec["steps"].append({"type": "roboflow_core/webhook_sink@v1", "name": "hook", "url": "http://127.0.0.1:9/",
                          "json_payload": {"frame": ["$steps.labels.image"]}})
    assert deferred.split(spec).drawing is None  # even a selector nested in a sink's payload


@pytest.mark.slow
async def test_a_pipeline_nobody_looks_at_draws_no_frame_and_the_one_read_is_drawn_once(direct_backend):
    seen: list[InferenceResult] = []
    labelled, made = LabelsBlockV1.runs, LazyJpeg.made
    spec = detection_workflow("builtin/people", line=LINE)
    await direct_backend.start_pipeline("drawn-1", "street", str(STREET), WorkflowRef(workflow_spec=spec),
                                        on_result=lambda handle, result: seen.append(result))
    await _finished(direct_backend, "drawn-1")
    assert len(seen) >= 10 and any(r.detections for r in seen)  # people were found on every kind of frame
    assert seen[-1].values.get("count_out") == 3  # the counting still ran on every frame
    assert not any(k.startswith(deferred.DRAW_PREFIX) for r in seen for k in r.values)
    assert LabelsBlockV1.runs == labelled and LazyJpeg.made == made  # nobody read a frame: none labelled or encoded
    frame = direct_backend.latest_result("drawn-1").frame
    assert LabelsBlockV1.runs == labelled + 1 and LazyJpeg.made == made + 1
    drawn = cv2.imdecode(np.frombuffer(frame or b"", np.uint8), cv2.IMREAD_COLOR)
    assert drawn is not None and drawn.shape[:2] == (300, 240)
    magenta = np.all(np.abs(drawn[200:290, 110:131].astype(int) - (255, 0, 255)) < 60, axis=2)
    assert magenta.any(axis=1).mean() > 0.9  # the counting line is on it, down the whole column


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{"line": LINE}, {"zone": [[0, 0], [100, 0], [100, 200], [0, 200]]}, {}],
                         ids=["line", "zone", "boxes"])
def test_drawn_on_demand_equals_the_whole_workflows_frame(direct_backend, kw):
    """The same blocks on the same inputs: every pixel as the workflow with its drawing steps draws it."""
    from inference.core.workflows.execution_engine.entities.base import VideoMetadata

    runtime = direct_backend.runtime()
    spec = detection_workflow("builtin/people", **kw)
    parts = deferred.split(spec)
    assert parts.drawing is not None
    extras = [o for o in parts.analysis["outputs"] if o["name"].startswith(deferred.DRAW_PREFIX)]
    whole = runtime.compile({**spec, "outputs": spec["outputs"] + extras})  # draws, and says what it drew from
    drawing = deferred.Drawing(runtime.compile(parts.drawing), "image")
    cap, start, compared = cv2.VideoCapture(str(STREET)), datetime.datetime(2026, 1, 1), 0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        meta = VideoMetadata(video_identifier="street", frame_number=compared, fps=5, comes_from_video_file=True,
                             frame_timestamp=start + datetime.timedelta(seconds=compared / 5))
        out = whole.run(runtime_parameters={"image": [{"type": "numpy_object", "value": frame,
                                                       "video_metadata": meta}]}, fps=5)[0]
        expected = out["annotated"].numpy_image
        assert np.array_equal(drawing.draw(frame, deferred.take_values(out)), expected), compared
        compared += 1
    assert compared >= 30
