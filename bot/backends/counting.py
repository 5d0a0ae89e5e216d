"""Counting that counts on real CCTV: the line counter's anchor and the byte tracker's settings, for every spec.

inference's defaults were made for 30 fps footage with tight boxes: the line counter (no `triggering_anchor`)
waits for all four box corners to cross, which loose, flickering boxes never do, and ByteTrack drops an id once
a box moves further between processed frames than IoU 0.2 allows. Measured on vtest.avi (bench/line_count.py):
0 counted where 37 people crossed, before.
"""

from __future__ import annotations

import copy
import re
from typing import Any

# Detector blocks whose boxes are whole people: their feet (bottom centre) are where they are on the ground.
PEOPLE_DETECTORS = frozenset({"vision_agent/hog_people_detector@v1"})
PEOPLE_ANCHOR, DEFAULT_ANCHOR = "BOTTOM_CENTER", "CENTER"
# Our line counter (bot/backends/builtin/line_counter.py): remembers a track's side through short gaps.
LINE_COUNTER_BLOCK = "vision_agent/line_counter@v1"
# Our line drawing (bot/backends/builtin/line_overlay.py): opaque, outlined, its in/out box sized to the frame.
LINE_OVERLAY_BLOCK = "vision_agent/line_overlay@v1"
# Label and box sizes from the frame's width (bot/backends/builtin/frame_scale.py).
FRAME_SCALE_BLOCK = "vision_agent/frame_scale@v1"
# Detection labels kept whole inside the frame, sized to it (bot/backends/builtin/labels.py).
LABELS_BLOCK = "vision_agent/labels@v1"
# Our tracker (bot/backends/builtin/tracker.py): matches by predicted position within the reach the time between
# frames allows, so people are tracked at 2-3 fps, where ByteTrack's overlap test finds nothing to match.
TRACKER_BLOCK = "vision_agent/tracker@v1"
BYTE_TRACKER_BLOCK = "roboflow_core/byte_tracker@v3"
# Low-fps CCTV (5–10 processed frames a second, a detector that misses someone now and then):
# keep a lost track 2 s (lost_track_buffer counts 1/30 s at any fps) and match a box to a track whose predicted box
# it overlaps at all: ByteTrack's cost is 1 - IoU x confidence, so 0.99 takes IoU x conf >= 0.01. At 5 fps people
# move far between frames; with our line counter, 32 -> 34 of 37 crossings on vtest.avi (0.95 before, none counted
# wrongly either way); 1.0 would match boxes that do not overlap at all (66 counted).
TRACKER_SETTINGS: dict[str, Any] = {
    "track_activation_threshold": 0.25,
    "lost_track_buffer": 60,
    "minimum_matching_threshold": 0.99,
}
_LINE_COUNTERS = re.compile(r"^(roboflow_core|vision_agent)/line_counter@v\d+$")
_TRACKERS = re.compile(r"^roboflow_core/byte_tracker@v\d+$")
_STEP_REF = re.compile(r"^\$steps\.([^.]+)\.")


# `anchor=` words people use -> supervision Position names the line counter blocks take
ANCHOR_WORDS = {"feet": "BOTTOM_CENTER", "bottom": "BOTTOM_CENTER", "centre": "CENTER", "center": "CENTER",
                "head": "TOP_CENTER", "top": "TOP_CENTER"}
ANCHORS = ("CENTER", "CENTER_LEFT", "CENTER_RIGHT", "TOP_CENTER", "TOP_LEFT", "TOP_RIGHT", "BOTTOM_LEFT",
           "BOTTOM_CENTER", "BOTTOM_RIGHT")


def parse_anchor(text: str) -> str:
    """'feet' / 'centre' / 'top' or a box point name ('BOTTOM_CENTER') -> the name; ValueError naming the choices."""
    word = text.strip().lower()
    name = ANCHOR_WORDS.get(word, word.upper())
    if name not in ANCHORS:
        raise ValueError(f"anchor={text} is not a point of a box; use feet, centre or top "
                         f"(or one of {', '.join(ANCHORS)})")
    return name


def anchor_for(detector_type: str) -> str:
    """The box point whose crossing counts: people's feet, the centre of anything else."""
    return PEOPLE_ANCHOR if detector_type in PEOPLE_DETECTORS else DEFAULT_ANCHOR


def tracker_step(detections: str, name: str = "tracker", detector_type: str = "") -> dict[str, Any]:
    """A tracker step with the low-fps CCTV settings: ours for people (any frame rate), else the byte tracker."""
    kind = TRACKER_BLOCK if detector_type in PEOPLE_DETECTORS else BYTE_TRACKER_BLOCK
    return {"type": kind, "name": name, "image": "$inputs.image", "detections": detections, **TRACKER_SETTINGS}


def with_counting_defaults(spec: Any) -> Any:
    """A copy of spec whose line counters have an anchor and whose byte trackers the CCTV settings, where unset.

    What a spec sets itself is kept; anything not a workflow spec is returned as it is (the checks reject it).
    """
    steps = spec.get("steps") if isinstance(spec, dict) else None
    if not isinstance(steps, list) or not any(_needs_defaults(s) for s in steps):
        return spec
    spec = copy.deepcopy(spec)
    by_name = {s.get("name"): s for s in spec["steps"] if isinstance(s, dict)}
    for step in spec["steps"]:
        if not isinstance(step, dict):
            continue
        kind = str(step.get("type", ""))
        if _TRACKERS.match(kind):
            for key, value in TRACKER_SETTINGS.items():
                step.setdefault(key, value)
        elif _LINE_COUNTERS.match(kind) and step.get("triggering_anchor") is None:
            step["triggering_anchor"] = anchor_for(_source_detector(step, by_name))
    return spec


def _needs_defaults(step: Any) -> bool:
    kind = str(step.get("type", "")) if isinstance(step, dict) else ""
    if _TRACKERS.match(kind):
        return any(key not in step for key in TRACKER_SETTINGS)
    return bool(_LINE_COUNTERS.match(kind)) and step.get("triggering_anchor") is None


def _source_detector(step: dict[str, Any], by_name: dict[Any, Any]) -> str:
    """The type of the step that made the detections a step reads, following trackers and filters back."""
    seen: set[str] = set()
    while True:
        ref = step.get("detections") or step.get("predictions") or ""
        m = _STEP_REF.match(ref) if isinstance(ref, str) else None
        if not m or m[1] in seen or not isinstance(by_name.get(m[1]), dict):
            return str(step.get("type", ""))
        seen.add(m[1])
        step = by_name[m[1]]
        if not (step.get("detections") or step.get("predictions")):
            return str(step.get("type", ""))


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _numbers(v)]
    return []


def count_side(key: str) -> str | None:
    """'count_in' / 'count_out' when an output holds a line counter's total (e.g. 'line_counter_count_in'), else None."""
    for side in ("count_in", "count_out"):
        if key == side or key.endswith("_" + side) or key.endswith("." + side):
            return side
    return None


def line_totals(values: dict[str, Any]) -> dict[str, float]:
    """count_in / count_out totals, whatever the line counter step is called (e.g. 'line_counter_count_in')."""
    out: dict[str, float] = {}
    for key, val in values.items():
        side = count_side(key)
        nums = _numbers(val) if side else []
        if side and nums:
            out[side] = out.get(side, 0.0) + sum(nums)
    return out
