"""Drawing on demand: a pipeline's workflow runs without its drawing steps; they run when someone reads the frame.

A camera delivers every frame to rules and counters, but people see few of them (alerts, snapshots, clips at their
own rate, the agent asking). The drawing steps (boxes, labels, the counting line, a zone's tint) cost a few ms of
CPU and a frame copy each, on every frame. `split` takes them out of a spec into a second, drawing-only spec whose
inputs are the image and the values those steps read from the rest (the tracked detections, the line's counts),
given as batch inputs the way Roboflow's Workflow Builder feeds cached steps; the analysis spec outputs those values
under DRAW_PREFIX names. `Drawing.draw` runs the same blocks on the same inputs, so the frame is drawn identically.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.backends.counting import FRAME_SCALE_BLOCK, LABELS_BLOCK, LINE_OVERLAY_BLOCK
from bot.backends.orientation import ORIENT_BLOCK

DRAW_PREFIX = "_draw__"  # outputs the analysis spec adds for the drawing: taken off before conversion
_DRAWING = re.compile(r"^roboflow_core/\w+_visualization@v\d+$")
_OURS = frozenset({FRAME_SCALE_BLOCK, LABELS_BLOCK, LINE_OVERLAY_BLOCK})
_REF = re.compile(r"^\$(steps|inputs)\.([^.]+)(?:\.(.+))?$")
log = logging.getLogger(__name__)
drawn = 0  # frames drawn on demand in this process (tests and benches count them)
_count_lock = threading.Lock()


@dataclass(frozen=True)
class Split:
    """A spec taken apart: `analysis` runs on every frame, `drawing` (None: nothing to defer) on demand."""

    analysis: dict[str, Any]
    drawing: dict[str, Any] | None = None
    image_input: str = "image"


def split(spec: dict[str, Any], image_input: str = "image") -> Split:
    """The spec without its drawing steps plus a spec of only those; the spec whole when they cannot be parted (a
    drawing step's output read by another kind of step or output, or nothing drawn)."""
    steps = [s for s in spec.get("steps") or [] if isinstance(s, dict)]
    drawing = {str(s.get("name")) for s in steps if is_drawing(s)}
    outputs = [o for o in spec.get("outputs") or [] if isinstance(o, dict)]
    drawn_outputs = [o for o in outputs if _step_of(o.get("selector")) in drawing]
    if (not drawn_outputs or len(drawing) != sum(1 for s in steps if is_drawing(s))
            or any(not str(o.get("selector")).endswith(".image") for o in drawn_outputs)):
        return Split(spec, None, image_input)  # nothing drawn, names taken twice, or a value read off a drawing
    kept = [s for s in steps if str(s.get("name")) not in drawing]
    if any(_step_of(ref) in drawing for s in kept for ref in _refs(s)):
        return Split(spec, None, image_input)  # an analysis step reads a drawing: keep it whole
    # A turned camera's frames are turned upright first (bot/backends/orientation.py): the drawing turns its frame
    # the same way (a fraction of a ms), rather than the analysis handing each turned frame over.
    read = {_step_of(ref) for s in steps if str(s.get("name")) in drawing for ref in _refs(s)}
    repeated = [s for s in kept if s.get("type") == ORIENT_BLOCK and str(s.get("name")) in read
                and all(ref.startswith("$inputs.") for ref in _refs(s))]
    again = {str(s.get("name")) for s in repeated}
    needed = sorted({ref for s in steps if str(s.get("name")) in drawing for ref in _refs(s)
                     if _step_of(ref) not in drawing | again and ref.startswith("$steps.")})
    names = {ref: DRAW_PREFIX + ref[len("$steps."):].replace(".", "__") for ref in needed}
    analysis = {**spec, "steps": kept, "outputs": [o for o in outputs if o not in drawn_outputs]
                + [{"type": "JsonField", "name": names[ref], "selector": ref} for ref in needed]}
    inputs = [i for i in spec.get("inputs") or [] if isinstance(i, dict)]
    drawing_steps = repeated + [_rewire(s, names) for s in steps if str(s.get("name")) in drawing]
    drawing_spec = {"version": spec.get("version", "1.0"),
                    "inputs": inputs + [{"type": "WorkflowBatchInput", "name": n} for n in names.values()],
                    "steps": drawing_steps, "outputs": drawn_outputs}
    return Split(analysis, drawing_spec, image_input)


def prepare(spec: dict[str, Any], image_input: str, compile_spec: Callable[[dict[str, Any]], Any],
            parameters: dict[str, Any] | None = None) -> tuple[dict[str, Any], Drawing | None]:
    """(the spec a pipeline runs on every frame, its Drawing for frames someone reads); the spec whole and no
    Drawing when there is nothing to defer or the drawing part does not compile on its own (drawn as before)."""
    parts = split(spec, image_input)
    if parts.drawing is None:
        return spec, None
    try:
        engine = compile_spec(parts.drawing)
    except Exception as exc:  # noqa: BLE001 - drawing every frame, as before, is still right
        log.warning("drawing steps kept in the workflow (they did not compile alone): %s", exc)
        return spec, None
    return parts.analysis, Drawing(engine, image_input, parameters)


def is_drawing(step: dict[str, Any]) -> bool:
    """A step that only draws on a frame (a visualization block, our labels, line overlay or frame-scale block)."""
    kind = str(step.get("type", ""))
    return kind in _OURS or bool(_DRAWING.match(kind))


def _step_of(selector: Any) -> str | None:
    m = _REF.match(selector) if isinstance(selector, str) else None
    return m[2] if m and m[1] == "steps" else None


def _refs(value: Any) -> list[str]:
    """Every selector in a step, nested lists and dicts included (a sink may name an image inside a dict)."""
    if isinstance(value, str):
        return [value] if _REF.match(value) else []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [ref for item in items for ref in _refs(item)]


def _rewire(value: Any, names: dict[str, str]) -> Any:
    """The step reading the analysis values from the drawing spec's inputs instead of the steps that made them."""
    if isinstance(value, str):
        return f"$inputs.{names[value]}" if value in names else value
    if isinstance(value, dict):
        return {k: _rewire(v, names) for k, v in value.items()}
    return [_rewire(v, names) for v in value] if isinstance(value, list) else value


def take_values(output: dict[str, Any]) -> dict[str, Any]:
    """The drawing's inputs taken out of one analysis output (so they are not read as results)."""
    return {k: output.pop(k) for k in [k for k in output if k.startswith(DRAW_PREFIX)]}


class Drawing:
    """A compiled drawing spec: `draw(frame, values)` runs it on one frame (thread-safe) and gives the drawn image."""

    def __init__(self, engine: Any, image_input: str, parameters: dict[str, Any] | None = None) -> None:
        self._engine, self._image_input = engine, image_input
        self._parameters = dict(parameters or {})
        self._lock = threading.Lock()

    def draw(self, frame: Any, values: dict[str, Any]) -> Any:
        global drawn
        runtime = {**self._parameters, self._image_input: frame, **{k: [v] for k, v in values.items()}}
        with self._lock:
            outputs = self._engine.run(runtime_parameters=runtime)
        with _count_lock:
            drawn += 1
        image = _image_of(outputs[0]) if outputs else None
        return frame if image is None else image


def _image_of(output: dict[str, Any]) -> Any:
    """The output named "annotated", else the first image (as convert picks a workflow's frame)."""
    images = {k: v.numpy_image for k, v in output.items() if hasattr(v, "numpy_image")}
    return images.get("annotated", next(iter(images.values()), None))
