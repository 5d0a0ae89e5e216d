"""builtin/people and line counting on real CCTV (OpenCV's vtest.avi street clip), through the real in-process engine.

The frame, the clip and their labels are made by `python -m bench._fixtures` (tests/fixtures/data); the labels
were drawn by eye (bench/data/vtest_people.json, vtest_crossings.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import supervision as sv

from bot.config import Settings
from bot.pipelines.request import StartRequest
from tests.bot.monitor_helpers import run_to_end

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"
pytestmark = pytest.mark.slow


def _hits(found: np.ndarray, wanted: np.ndarray, ignored: np.ndarray) -> tuple[int, int, int]:
    """(true positives, false positives, misses) at IoU >= 0.5, one box per person; hits on ignored boxes are neither."""
    tp = fp = 0
    free = list(range(len(wanted)))
    for box in found:
        ious = sv.box_iou_batch(box[None], wanted[free])[0] if free else np.zeros(0)
        if len(ious) and ious.max() >= 0.5:
            free.pop(int(ious.argmax()))
            tp += 1
        elif not (len(ignored) and sv.box_iou_batch(box[None], ignored)[0].max() >= 0.3):
            fp += 1
    return tp, fp, len(free)


async def test_people_in_a_real_street_frame_are_found_with_boxes_from_head_to_feet(direct_backend) -> None:
    labels = json.loads((DATA / "street.json").read_text())
    wanted = np.array(labels["people"], dtype=float)
    ignored = np.array(labels["ignore"], dtype=float).reshape(-1, 4)
    result = await direct_backend.run_single((DATA / "street.jpg").read_bytes(), model_id="builtin/people")
    found = np.array([d.xyxy for d in result.detections], dtype=float).reshape(-1, 4)
    tp, fp, missed = _hits(found, wanted, ignored)
    assert len(wanted) >= 6 and {d.class_name for d in result.detections} <= {"person"}
    assert tp / len(wanted) >= 0.8, f"found {tp} of {len(wanted)} people: {found.round().tolist()}"
    assert tp / max(tp + fp, 1) >= 0.8, f"{fp} boxes on no one: {found.round().tolist()}"


async def test_people_crossing_the_middle_of_real_footage_are_counted_once_each(
    direct_backend, tmp_path: Path, settings: Settings
) -> None:
    """`/vision start clip model=builtin/people line=middle` on 6.6 s of street at 5 fps: three men cross leftwards."""
    from bot.pipelines.analytics import compose
    from bot.pipelines.manager import PipelineManager

    clip = DATA / "crossing.mp4"
    expected = json.loads((DATA / "crossing.json").read_text())
    analytics = await compose("builtin/people", str(clip), "middle", None, {})
    assert analytics.line == expected["line"]  # the by-eye count was made for this line
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", settings)
    counts: list[tuple[int, int]] = []
    mgr.add_result_listener(lambda h, r: counts.append((r.values.get("count_in"), r.values.get("count_out"))))
    try:
        await mgr.start(StartRequest(str(clip), "street", workflow_spec=analytics.spec))
        await run_to_end(mgr, "street")
    finally:
        await mgr.stop_all()
    assert mgr.resolve("street").status == "finished" and len(counts) >= 30
    assert counts[-1] == (expected["count"]["in"], expected["count"]["out"]), counts[-1]
