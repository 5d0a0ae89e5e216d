"""A pipeline as a member asks for one: the one model of `/vision start`, the start_pipeline tool (and MCP), the
REST body and a recipe's replayed step. Its names, defaults and bounds live here once."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from bot.objects.base import Spec, check_free_form
from bot.objects.text import Name, Text20, Text100, Text200, Text2000

DEFAULT_MODEL = "builtin/people"  # what a start runs when given no model or workflow, at every door
PEOPLE = "builtin/people"
MAX_FPS = 120.0  # a higher rate only queues frames no backend here keeps up with
MIN_HEIGHT = (8, 2000)  # pixels: under 8 the detector cannot upscale further; over 2000 is taller than any frame
MAX_PARAMETERS = 50  # workflow inputs a start may set
ONE_WORKFLOW = "Give either model= or workflow= (model, workflow_spec or workspace_name + workflow_id), not several."
BAD_WORKFLOW = "workflow= takes WORKSPACE/WORKFLOW_ID, e.g. workflow=my-ws/ppe-check."
SAVED_TURNED = ("rotate= and flip= turn the frames of a model or an inline workflow_spec, not of a saved workflow: "
                "add an image_preprocessing rotate/flip step to the workflow in Roboflow instead.")
NEEDS_MODEL = ("line= and zone= work with a model (model=), not a saved workflow; add a line counter or "
               "time-in-zone step to the workflow instead.")

# Every option `/vision start` takes: its syntax and what it does. The slash grammar allows exactly these, `/vision
# help` lists them, and the same words describe the fields below (the tool's schema, the REST body).
START_OPTIONS: dict[str, tuple[str, str]] = {
    "model": ("model=ID", f"the detector: {PEOPLE} (default), builtin/faces, builtin/motion or a Roboflow model id"),
    "workflow": ("workflow=WORKSPACE/ID", "a saved Roboflow workflow instead of a model"),
    "fps": ("fps=N", f"frames a second to process, above 0 and up to {MAX_FPS:g}"),
    "name": ("name=NAME", "the pipeline's name (default: the camera's, else the stream's host or the file's name)"),
    "line": ("line=X1,Y1,X2,Y2[@WxH]|middle",
             "count objects crossing this line (pixels of the stream, or of a WxH frame they were measured on; "
             "middle: vertical through the centre)"),
    "anchor": ("anchor=feet|centre|top", "with line=: the box point that must cross (people: feet, else the centre)"),
    "zone": ("zone=X1,Y1,X2,Y2,X3,Y3,...[@WxH]|ZONE_NAME", "time how long objects stay in a polygon or a CAMERAS.md zone"),
    "confidence": ("confidence=0..1", "with a model: drop detections less sure than this"),
    "min_height": (f"min_height={MIN_HEIGHT[0]}..{MIN_HEIGHT[1]}",
                   f"with {PEOPLE}: the smallest person to look for, in pixels tall (in video it also measures them)"),
    "rotate": ("rotate=0|90|180|270", "a camera mounted turned: turn its frames this many degrees clockwise before "
               "anything reads them (line= and zone= are then points of the upright frame; default: its CAMERAS.md "
               "Rotate, else 0)"),
    "flip": ("flip=h|v|none", "a mirrored camera: mirror its frames after the turn, h left-right, v top-bottom "
             "(default: its CAMERAS.md Flip, else none)"),
    "backend": ("backend=direct|http|webrtc", "run it on another backend than the configured one"),
}
ROTATIONS = (0, 90, 180, 270)  # bot/backends/orientation.py turns frames by these (objects import no backend)
FLIP_WORDS = {"h": "h", "horizontal": "h", "mirror": "h", "mirrored": "h", "v": "v", "vertical": "v",
              "none": "none", "no": "none", "off": "none"}
BAD_ROTATE = "takes 0, 90, 180 or 270 (degrees clockwise)"
BAD_FLIP = "is h (mirror left-right), v (top-bottom) or none"


def _say(key: str) -> str:
    return START_OPTIONS[key][1]


def _aka(name: str, *old: str) -> AliasChoices:
    return AliasChoices(name, *old)


class PipelineSpec(Spec):
    """What starting a pipeline asks for, whichever door it came through (old names kept as aliases:
    video_reference, pipeline_name, model_id, max_fps)."""


    source: Text2000 = Field(validation_alias=_aka("source", "video_reference"),
                                  description="Camera name from CAMERAS.md, rtsp/http(s) URL, webcam index (0, 1, 2) "
                                  "or a video file path")
    name: Name | None = Field(None, validation_alias=_aka("name", "pipeline_name"), description=_say("name"))
    model: Text200 | None = Field(None, validation_alias=_aka("model", "model_id"), description=_say("model"))
    workflow: Text200 | None = Field(None, description=_say("workflow") + " (WORKSPACE/WORKFLOW_ID)")
    workspace_name: Text100 | None = Field(None, description="With workflow_id: the Roboflow workspace")
    workflow_id: Text100 | None = Field(None, description="With workspace_name: a saved Roboflow workflow")
    workflow_spec: dict[str, Any] | None = Field(None, description="An inline workflow specification "
                                                 "(validated before it is deployed)")
    fps: float | None = Field(None, gt=0, le=MAX_FPS, validation_alias=_aka("fps", "max_fps"),
                              description=_say("fps"), examples=[5])
    line: Text200 | None = Field(None, description=_say("line"))
    anchor: Text20 | None = Field(None, description=_say("anchor"))
    zone: Text2000 | None = Field(None, description=_say("zone"))
    confidence: float | None = Field(None, ge=0, le=1, description=_say("confidence"), examples=[0.4])
    min_height: int | None = Field(None, ge=MIN_HEIGHT[0], le=MIN_HEIGHT[1], description=_say("min_height"),
                                   examples=[40])
    rotate: int | None = Field(None, description=_say("rotate"), examples=[180])
    flip: Literal["h", "v", "none"] | None = Field(None, description=_say("flip"))
    backend: Literal["direct", "http", "webrtc"] | None = Field(
        None, description="Only when asked: " + _say("backend"))
    parameters: dict[str, Any] | None = Field(None, description="The workflow's inputs (thresholds, classes)")

    @model_validator(mode="before")
    @classmethod
    def _blanks(cls, data: Any) -> Any:
        """'' means not given (the model often sends it); a webcam index may come as a number."""
        if not isinstance(data, dict):
            return data
        out = {k: v for k, v in data.items() if not (isinstance(v, str) and not v.strip() and k not in
                                                     ("source", "video_reference"))}
        for key in ("source", "video_reference"):
            if isinstance(out.get(key), int) and not isinstance(out.get(key), bool):
                out[key] = str(out[key])
        return out

    @field_validator("source")
    @classmethod
    def _source(cls, v: str) -> str:
        if not v:
            raise ValueError("is required: a camera name, a stream URL, a webcam index or a video file")
        return v

    @field_validator("fps", "confidence", mode="after")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError(f"takes a finite number, not {v!r}")
        return v

    REFUSALS: ClassVar[dict[str, str]] = {"rotate": f"rotate {BAD_ROTATE}"}

    @field_validator("rotate", mode="before")
    @classmethod
    def _degrees(cls, v: Any) -> Any:
        return v.strip().removesuffix("°") if isinstance(v, str) else v  # `rotate=90°`

    @field_validator("rotate", mode="after")
    @classmethod
    def _rotate(cls, v: int | None) -> int | None:
        return None if v is None else rotation(v)

    @field_validator("flip", mode="before")
    @classmethod
    def _flip(cls, v: Any) -> Any:
        return flip_word(v) if isinstance(v, str) else v

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None and (len(v) > MAX_PARAMETERS or any(len(str(k)) > 64 for k in v)):
            raise ValueError(f"holds at most {MAX_PARAMETERS} inputs with names of at most 64 characters")
        return check_free_form(v, "a workflow's inputs", 10_000)

    @field_validator("workflow_spec")
    @classmethod
    def _spec(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_free_form(v, "an inline workflow", 50_000)

    @model_validator(mode="after")
    def _what_runs(self) -> PipelineSpec:
        if self.workflow is not None:
            ws, _, wf = self.workflow.partition("/")
            if not ws or not wf or self.workspace_name or self.workflow_id:
                raise ValueError(BAD_WORKFLOW if not ws or not wf else ONE_WORKFLOW)
            object.__setattr__(self, "workspace_name", ws)
            object.__setattr__(self, "workflow_id", wf)
        saved = self.workspace_name is not None or self.workflow_id is not None
        if sum((self.model is not None, self.workflow_spec is not None, saved)) > 1:
            raise ValueError(ONE_WORKFLOW)
        if saved and not (self.workspace_name and self.workflow_id):
            raise ValueError("a saved workflow needs both workspace_name and workflow_id (workflow=WORKSPACE/ID).")
        if self.model is None and self.workflow_spec is None and not saved:
            object.__setattr__(self, "model", DEFAULT_MODEL)
        if (self.line is not None or self.zone is not None) and self.model is None:
            raise ValueError(NEEDS_MODEL)
        if saved and (self.rotate or self.flip in ("h", "v")):
            raise ValueError(SAVED_TURNED)
        check_detector(self.model, self.confidence, self.min_height)
        return self


def check_detector(model: str | None, confidence: float | None, min_height: int | None) -> None:
    """ValueError (one line) for detector settings without a model that takes them."""
    if confidence is None and min_height is None:
        return
    if model is None:
        raise ValueError("confidence= and min_height= set a model's detector: give them with model= (a workflow "
                         "sets its own detector's settings).")
    if min_height is not None and model != PEOPLE:
        faces = " (it finds faces from about 24 px: for smaller ones use the main stream)" \
            if model == "builtin/faces" else ""
        raise ValueError(f"min_height= is for model={PEOPLE} (the smallest person to find); "
                         f"{model} does not take it{faces}: drop min_height=.")


def rotation(value: Any) -> int:
    """A quarter turn in degrees clockwise, 0/90/180/270 (-90 is 270, 360 is 0); ValueError (BAD_ROTATE) otherwise."""
    try:
        degrees = int(str(value).strip().removesuffix("°")) if not isinstance(value, int) else value
    except ValueError:
        raise ValueError(f"{BAD_ROTATE}, not {str(value)[:20]!r}") from None
    if degrees % 90 or not -360 <= degrees <= 360:
        raise ValueError(f"{BAD_ROTATE}, not {degrees}")
    return degrees % 360


def flip_word(value: str) -> str:
    """'h' / 'v' / 'none' for the words people use ('mirror', 'horizontal', 'off'); the word as given otherwise (the
    model's check then refuses it, BAD_FLIP)."""
    return FLIP_WORDS.get(value.strip().lower(), value)
