"""What starting a pipeline asks for, once checked (StartRequest): built from the one model every door validates with
(bot/objects/pipeline.py PipelineSpec), then checked against the workspace (named zones) before any source opens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.objects.pipeline import (  # noqa: F401 - re-exported: the pipeline's bounds, named where they are used
    BAD_WORKFLOW,
    DEFAULT_MODEL,
    MAX_FPS,
    MIN_HEIGHT,
    NEEDS_MODEL,
    ONE_WORKFLOW,
    PEOPLE,
    START_OPTIONS,
    PipelineSpec,
    check_detector,
)
from bot.objects.refusal import parse
from bot.pipelines.analytics import check_syntax
from bot.pipelines.tally import Origin


@dataclass(frozen=True)
class StartRequest:
    """What a pipeline start asks for, whichever surface it came from (`request_of` a checked PipelineSpec)."""

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
    rotate: int | None = None  # a turned camera: degrees clockwise that turn its frames upright (None: its row's)
    flip: str | None = None  # a mirrored one: "h" / "v" after the turn, "none" (None: its CAMERAS.md row's)
    owner: str | None = None  # the Slack user whose share it counts against (None: the operator); caps.py
    owner_channel: str | None = None  # where the owner made it (its audience): bot/objects/owner.py
    owner_place: str = "operator"

    @property
    def saved_workflow(self) -> bool:
        return self.workflow_id is not None or self.workspace_name is not None


def request_of(spec: PipelineSpec, origin: Origin | None = None) -> StartRequest:
    """The checked spec as the request `bot.pipelines.start.start` runs."""
    return StartRequest(
        spec.source, name=spec.name, model_id=spec.model, workflow_spec=spec.workflow_spec,
        workspace_name=spec.workspace_name, workflow_id=spec.workflow_id, max_fps=spec.fps, line=spec.line,
        zone=spec.zone, anchor=spec.anchor, parameters=spec.parameters, backend=spec.backend, origin=origin,
        confidence=spec.confidence, min_height=spec.min_height, rotate=spec.rotate, flip=spec.flip,
    )


def from_options(source: str, opts: Mapping[str, str]) -> StartRequest:
    """The `/vision start` words (SOURCE and its key=value options) through the one model (Refused: one line)."""
    return request_of(parse(PipelineSpec, {"source": source, **opts}))


def check(req: StartRequest, zones: dict[str, str]) -> None:
    """ValueError (one line) for a request no source should be opened for: the model's checks again (a request built
    in code, not through a door, gets them too), then line/zone/anchor against the workspace's named zones."""
    spec = {"source": req.source, "model": req.model_id, "workflow_spec": req.workflow_spec,
            "workspace_name": req.workspace_name, "workflow_id": req.workflow_id, "fps": req.max_fps,
            "line": req.line, "zone": req.zone, "anchor": req.anchor, "confidence": req.confidence,
            "min_height": req.min_height, "backend": req.backend, "name": req.name, "rotate": req.rotate,
            "flip": req.flip}
    parse(PipelineSpec, {k: v for k, v in spec.items() if v is not None})
    if req.model_id is None and req.workflow_spec is None and not req.saved_workflow:
        raise ValueError("give a model (e.g. 'builtin/people'), a workflow_spec, or workspace_name + workflow_id.")
    check_syntax(req.line, req.zone, zones, req.anchor)
