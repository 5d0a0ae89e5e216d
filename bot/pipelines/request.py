"""What starting a pipeline asks for, from any surface (StartRequest), its checks before any source is opened, and
the `/vision start` grammar that parses into it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.pipelines.analytics import NEEDS_MODEL, check_syntax
from bot.pipelines.tally import Origin

DEFAULT_MODEL = "builtin/people"  # what `/vision start SOURCE` and the REST API run when given no model or workflow
MAX_FPS = 120.0  # a higher rate only queues frames no backend here keeps up with
ONE_WORKFLOW = "Give either model= or workflow= (model_id, workflow_spec or workspace_name + workflow_id), not several."
NO_WORKFLOW = "give model_id (e.g. 'builtin/people'), a workflow_spec, or workspace_name + workflow_id."
BAD_WORKFLOW = "workflow= takes WORKSPACE/WORKFLOW_ID, e.g. workflow=my-ws/ppe-check."
MIN_HEIGHT = (8, 2000)  # pixels: under 8 the detector cannot upscale further; over 2000 is taller than any frame
PEOPLE = "builtin/people"

# Every option `/vision start` takes: its syntax and what it does. parse_options allows exactly these, and the usage
# and `/vision help` list them from here, so the help cannot drift from the grammar.
START_OPTIONS: dict[str, tuple[str, str]] = {
    "model": ("model=ID", f"the detector: {PEOPLE} (default), builtin/faces, builtin/motion or a Roboflow model id"),
    "workflow": ("workflow=WORKSPACE/ID", "a saved Roboflow workflow instead of a model"),
    "fps": ("fps=N", f"frames a second to process, up to {MAX_FPS:g}"),
    "name": ("name=NAME", "the pipeline's name (default: the camera's, else the stream's host or the file's name)"),
    "line": ("line=X1,Y1,X2,Y2[@WxH]|middle",
             "count objects crossing this line (pixels of the stream, or of a WxH frame they were measured on; "
             "middle: vertical through the centre)"),
    "anchor": ("anchor=feet|centre|top", "with line=: the box point that must cross (people: feet, else the centre)"),
    "zone": ("zone=X1,Y1,X2,Y2,X3,Y3,...[@WxH]|ZONE_NAME", "time how long objects stay in a polygon or a CAMERAS.md zone"),
    "confidence": ("confidence=0..1", "with a model: drop detections less sure than this"),
    "min_height": (f"min_height={MIN_HEIGHT[0]}..{MIN_HEIGHT[1]}",
                   f"with {PEOPLE}: the smallest person to look for, in pixels tall (in video it also measures them)"),
    "backend": ("backend=direct|http|webrtc", "run it on another backend than the configured one"),
}


@dataclass(frozen=True)
class StartRequest:
    """What a pipeline start asks for, whichever surface it came from (unchecked until `check`)."""

    source: str  # camera name, rtsp/http(s) URL, webcam index or video file
    name: str | None = None  # None: the camera's name, else the stream's host or the file's stem
    model_id: str | None = None
    workflow_spec: dict[str, Any] | None = None  # inline; validated by the backend before it deploys
    workspace_name: str | None = None  # with workflow_id: a saved Roboflow workflow
    workflow_id: str | None = None
    max_fps: float | None = None
    line: str | None = None  # with a model: count crossings of 'X1,Y1,X2,Y2' or 'middle'
    zone: str | None = None  # with a model: time objects in a polygon or a named zone of CAMERAS.md
    anchor: str | None = None  # with line: the box point that counts (feet / centre / top)
    parameters: dict[str, Any] | None = None  # the workflow's inputs (thresholds, classes): its detector settings
    backend: str | None = None  # another backend than the configured one (direct / http / webrtc)
    origin: Origin | None = None  # where it was asked: told there when its file runs out
    confidence: float | None = None  # with a model: its detector's confidence floor
    min_height: int | None = None  # with builtin/people: the smallest person to find, pixels tall
    owner: str | None = None  # the Slack user whose share it counts against (None: the operator); caps.py

    @property
    def saved_workflow(self) -> bool:
        return self.workflow_id is not None or self.workspace_name is not None


def fps_error(given: object) -> ValueError:
    return ValueError(f"fps must be a positive number up to {MAX_FPS:g}, not {given!r}.")


def check(req: StartRequest, zones: dict[str, str]) -> None:
    """ValueError (one line) for a request no source should be opened for: what to run, fps, line/zone/anchor."""
    if sum((req.model_id is not None, req.workflow_spec is not None, req.saved_workflow)) > 1:
        raise ValueError(ONE_WORKFLOW)
    if req.model_id is None and req.workflow_spec is None and not req.saved_workflow:
        raise ValueError(NO_WORKFLOW)
    if req.saved_workflow and not (req.workspace_name and req.workflow_id):
        raise ValueError("a saved workflow needs both workspace_name and workflow_id (workflow=WORKSPACE/ID).")
    if req.max_fps is not None and not (math.isfinite(req.max_fps) and 0 < req.max_fps <= MAX_FPS):
        raise fps_error(req.max_fps)
    if (req.line is not None or req.zone is not None) and req.model_id is None:
        raise ValueError(NEEDS_MODEL)
    check_detector(req)
    check_syntax(req.line, req.zone, zones, req.anchor)


def check_detector(req: StartRequest) -> None:
    """ValueError (one line) for detector settings out of range or without a model that takes them."""
    if req.confidence is None and req.min_height is None:
        return
    if req.model_id is None:
        raise ValueError("confidence= and min_height= set a model's detector: give them with model= (a workflow "
                         "sets its own detector's settings).")
    if req.confidence is not None and not (math.isfinite(req.confidence) and 0 <= req.confidence <= 1):
        raise ValueError(f"confidence= is a number from 0 to 1 (e.g. confidence=0.4), not {req.confidence!r}.")
    if req.min_height is not None:
        if req.model_id != PEOPLE:
            faces = " (it finds faces from about 24 px: for smaller ones use the main stream)" \
                if req.model_id == "builtin/faces" else ""
            raise ValueError(f"min_height= is for model={PEOPLE} (the smallest person to find); "
                             f"{req.model_id} does not take it{faces}: drop min_height=.")
        low, high = MIN_HEIGHT
        if not low <= req.min_height <= high:
            raise ValueError(f"min_height= is how tall the smallest person is, {low} to {high} pixels "
                             f"(e.g. min_height=40), not {req.min_height!r}.")


def _number(opts: Mapping[str, str], key: str, example: str, whole: bool = False) -> float | None:
    if key not in opts:
        return None
    try:
        value = float(opts[key])
    except ValueError:
        value = math.nan
    if math.isnan(value) or (whole and not value.is_integer()):
        raise ValueError(f"{key}= takes a {'whole ' if whole else ''}number (e.g. {key}={example}), not {opts[key]!r}.")
    return value


def from_options(source: str, opts: Mapping[str, str]) -> StartRequest:
    """The `/vision start` grammar (the REST body is the same fields): the options in START_OPTIONS."""
    workspace_name = workflow_id = None
    if "workflow" in opts:
        workspace_name, _, workflow_id = opts["workflow"].partition("/")
        if not workspace_name or not workflow_id:
            raise ValueError(BAD_WORKFLOW)
    model = opts.get("model", None if "workflow" in opts else DEFAULT_MODEL)
    fps = None
    if "fps" in opts:
        try:
            fps = float(opts["fps"])
        except ValueError:
            raise fps_error(opts["fps"]) from None
    return StartRequest(
        source, name=opts.get("name"), model_id=model, workspace_name=workspace_name, workflow_id=workflow_id,
        max_fps=fps, line=opts.get("line"), zone=opts.get("zone"), anchor=opts.get("anchor"),
        backend=opts.get("backend"), confidence=_number(opts, "confidence", "0.4"),
        min_height=None if (tall := _number(opts, "min_height", "40", whole=True)) is None else int(tall),
    )
