"""What starting a pipeline asks for, from any surface (StartRequest), its checks before any source is opened, and
the `/vision start` grammar that parses into it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.pipelines.analytics import NEEDS_MODEL, check_syntax

DEFAULT_MODEL = "builtin/people"  # what `/vision start SOURCE` and the REST API run when given no model or workflow
MAX_FPS = 120.0  # a higher rate only queues frames no backend here keeps up with
ONE_WORKFLOW = "Give either model= or workflow= (model_id, workflow_spec or workspace_name + workflow_id), not several."
NO_WORKFLOW = "give model_id (e.g. 'builtin/people'), a workflow_spec, or workspace_name + workflow_id."
BAD_WORKFLOW = "workflow= takes WORKSPACE/WORKFLOW_ID, e.g. workflow=my-ws/ppe-check."


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
    check_syntax(req.line, req.zone, zones, req.anchor)


def from_options(source: str, opts: Mapping[str, str]) -> StartRequest:
    """The `/vision start` grammar (the REST body is the same fields): `model=` (default builtin/people) or
    `workflow=WORKSPACE/ID`, `fps=N`, `name=`, `line=`, `anchor=`, `zone=`, `backend=`."""
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
        backend=opts.get("backend"),
    )
