"""Cameras mounted turned or mirrored: the `rotate=` / `flip=` setting, as the first step of the workflow a pipeline runs.

builtin/people's HOG finds upright people only: on a ceiling camera mounted without its flip setting (the street
upside down) it counted 0-1 of 3 crossings, turned 90° none at all. The setting turns every frame upright before
anything else reads it: the detector, the tracker, the line and zone (whose points are in the upright frame), and
the drawn frames people see. It is a workflow step (vision_agent/orient@v1, bot/backends/builtin/orient.py) put in
front of whatever the pipeline runs, so the direct backend and an inference server (the http backend) run the very
same thing, and a restored pipeline gets it again from its saved setting (bot/pipelines/state.py).

Order: the frame is first turned `rotate` degrees clockwise, then mirrored (`flip=h`: left-right; `flip=v`:
top-bottom, the same as rotate=180 with flip=h). Every one of the eight ways a picture can lie is one setting.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

ORIENT_BLOCK = "vision_agent/orient@v1"
ROTATIONS = (0, 90, 180, 270)  # degrees clockwise
FLIPS = ("h", "v")  # mirrored left-right / top-bottom, after the turn
ORIENTATION_OUTPUT = "orientation"  # the setting a pipeline runs with, as an output (bot/pipelines/limits.py reads it)
_IMAGE_INPUTS = ("WorkflowImage", "InferenceImage")
# Fields that take only a workflow input, never a step's image: they read the frame's video metadata (which video,
# when), not its pixels, so they keep the frame as it came. Every such image field of the blocks inference 1.8 and
# our plugin load (tests/bot/backends/test_orientation.py fails when an upgrade brings another).
INPUT_ONLY = frozenset({
    ("roboflow_core/byte_tracker@v2", "image"), ("roboflow_core/cache_get@v1", "image"),
    ("roboflow_core/cache_set@v1", "image"), ("roboflow_core/delta_filter@v1", "image"),
    ("roboflow_core/detection_event_log@v1", "image"), ("roboflow_core/line_counter@v2", "image"),
    ("roboflow_core/path_deviation_analytics@v2", "image"), ("roboflow_core/rate_limiter@v1", "video_reference_image"),
    ("roboflow_core/time_in_zone@v2", "image"), ("roboflow_core/time_in_zone@v3", "image"),
    ("roboflow_core/velocity@v1", "image"), ("vision_agent/line_counter@v1", "image"),
})


@dataclass(frozen=True)
class Orientation:
    """How a camera's frames are turned upright: `rotate` degrees clockwise, then mirrored by `flip` (or not)."""

    rotate: int = 0
    flip: str | None = None

    def __post_init__(self) -> None:
        if self.rotate not in ROTATIONS or self.flip not in (None, *FLIPS):
            raise ValueError(f"an orientation is rotate 0/90/180/270 and flip h/v, not {self.rotate}/{self.flip}")

    def __bool__(self) -> bool:
        return bool(self.rotate or self.flip)

    def size(self, width: int, height: int) -> tuple[int, int]:
        """A width x height frame's size once turned (a quarter turn swaps them)."""
        return (height, width) if self.rotate in (90, 270) else (width, height)

    def then(self, turn: int) -> Orientation:
        """This setting with the frames it gives turned `turn` degrees clockwise more (what a turned camera needs).

        A mirror reverses a turn's sense: turning a mirrored picture clockwise is the mirror of turning the picture
        counter-clockwise, so with a flip the extra turn is taken off the rotation instead of added.
        """
        rotate = (self.rotate - turn if self.flip else self.rotate + turn) % 360
        return Orientation(rotate, self.flip)

    def point(self, x: float, y: float, width: int, height: int) -> tuple[float, float]:
        """Where pixel (x, y) of a width x height frame lands once the frame is turned this way."""
        w, h = width - 1, height - 1
        x, y = {0: (x, y), 90: (h - y, x), 180: (w - x, h - y), 270: (y, w - x)}[self.rotate]
        w, h = self.size(w, h)
        return (w - x, y) if self.flip == "h" else (x, h - y) if self.flip == "v" else (x, y)

    def words(self) -> str:
        """'rotate=90 flip=h' (what a user types to get it); 'rotate=0' for none."""
        return f"rotate={self.rotate}" + (f" flip={self.flip}" if self.flip else "")

    def describe(self) -> str:
        """'frames turned 90° clockwise and mirrored left-right' or ''."""
        parts = [f"turned {self.rotate}° clockwise"] if self.rotate else []
        if self.flip:
            parts.append("mirrored " + ("left-right" if self.flip == "h" else "top-bottom"))
        return "frames " + " and ".join(parts) if parts else ""

    def as_output(self) -> dict[str, Any]:
        return {"rotate": self.rotate, "flip": self.flip}

    @classmethod
    def of(cls, rotate: int | None, flip: str | None) -> Orientation:
        """From a pipeline's saved or asked setting (None: not turned; flip 'none': not mirrored)."""
        return cls(int(rotate or 0) % 360, flip if flip in FLIPS else None)

    @classmethod
    def from_output(cls, value: Any) -> Orientation | None:
        """The orient step's output (a pipeline's `orientation` value), or None when it is not one."""
        if not isinstance(value, dict):
            return None
        try:
            return cls(int(value.get("rotate") or 0), value.get("flip") or None)
        except (TypeError, ValueError):
            return None


def turn_frame(frame: Any, orientation: Orientation) -> Any:
    """The frame turned and mirrored as `orientation` says (OpenCV's exact quarter turns: no resampling)."""
    import cv2  # OpenCV only where frames are turned, not where specs are composed

    turns = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    if orientation.rotate:
        frame = cv2.rotate(frame, turns[orientation.rotate])
    if orientation.flip:
        frame = cv2.flip(frame, 1 if orientation.flip == "h" else 0)
    return frame


def oriented(spec: dict[str, Any], orientation: Orientation) -> dict[str, Any]:
    """A copy of `spec` whose every step reads its frames turned upright: an orient step first, on each image input,
    and every `$inputs.<image>` a step or output read replaced by that step's image; `spec` itself when not turned.

    Its `orientation` output says the setting (a spec that has an output of that name keeps its own).
    """
    if not orientation or not isinstance(spec, dict):
        return spec
    inputs = [i for i in spec.get("inputs") or [] if isinstance(i, dict) and i.get("type") in _IMAGE_INPUTS]
    taken = {str(s.get("name")) for s in spec.get("steps") or [] if isinstance(s, dict)}
    front, swap = [], {}
    for item in inputs:
        name, k = "orient", 2
        while name in taken:
            name, k = f"orient_{k}", k + 1
        taken.add(name)
        image = f"$inputs.{item.get('name', 'image')}"
        front.append({"type": ORIENT_BLOCK, "name": name, "image": image, "rotate": orientation.rotate,
                      "flip": orientation.flip or "none"})
        swap[image] = f"$steps.{name}.image"
    out = copy.deepcopy(spec)
    out["steps"] = front + [_step_swapped(s, swap) for s in out.get("steps") or []]
    outputs = [_swapped(o, swap) for o in out.get("outputs") or []]
    if front and not any(isinstance(o, dict) and o.get("name") == ORIENTATION_OUTPUT for o in outputs):
        outputs.append({"type": "JsonField", "name": ORIENTATION_OUTPUT,
                        "selector": f"$steps.{front[0]['name']}.{ORIENTATION_OUTPUT}"})
    out["outputs"] = outputs
    return out


def orientation_of(spec: Any) -> Orientation | None:
    """The setting of a spec's orient step that reads a workflow input (what `oriented` put first), or None."""
    for step in spec.get("steps") or [] if isinstance(spec, dict) else []:
        if isinstance(step, dict) and step.get("type") == ORIENT_BLOCK and str(step.get("image", "")).startswith(
                "$inputs."):
            try:
                return Orientation.of(int(step.get("rotate") or 0), step.get("flip"))
            except (TypeError, ValueError):
                return None
    return None


def _step_swapped(step: Any, swap: dict[str, str]) -> Any:
    """A step reading the turned frame, but for its fields that take only a workflow input (INPUT_ONLY)."""
    if not isinstance(step, dict):
        return step
    kind = step.get("type")
    return {k: v if (kind, k) in INPUT_ONLY else _swapped(v, swap) for k, v in step.items()}


def _swapped(value: Any, swap: dict[str, str]) -> Any:
    if isinstance(value, str):
        return swap.get(value, value)
    if isinstance(value, dict):
        return {k: _swapped(v, swap) for k, v in value.items()}
    return [_swapped(v, swap) for v in value] if isinstance(value, list) else value
