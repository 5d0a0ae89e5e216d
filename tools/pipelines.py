"""Pipeline tools: start, results, list, stop, pause, resume (by id or name)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tools.base import ToolArgs, ToolContext, ToolResult
from tools.registry import ToolRegistry


class StartPipelineArgs(ToolArgs):
    video_reference: str = Field(description="RTSP/HTTP URL, webcam index (0, 1, 2), or a video file path")
    pipeline_name: str = Field(description="Human-friendly name for this pipeline, e.g. the camera name")
    workflow_spec: dict[str, Any] | None = Field(None, description="Inline workflow specification")
    workspace_name: str | None = None
    workflow_id: str | None = None
    model_id: str | None = Field(None, description="Simple detection model, e.g. 'builtin/faces'")
    max_fps: float | None = Field(None, gt=0, description="Frame rate limit")
    parameters: dict[str, Any] | None = None


class PipelineRef(ToolArgs):
    pipeline_id: str = Field(description="Pipeline id or name")


class GetResultsArgs(PipelineRef):
    max_results: int = Field(5, ge=1, le=50)
    include_frame: bool = Field(False, description="Return and show the latest annotated frame")


class NoArgs(ToolArgs):
    pass


NOT_YET = "not available yet: pipelines are not wired into this build"


async def _not_yet(args: Any, ctx: ToolContext) -> ToolResult:
    return ToolResult.error(NOT_YET)


def register(reg: ToolRegistry) -> None:
    reg.register(
        "start_pipeline",
        "Start continuous video processing on a camera or video source. Runs a workflow on every frame: "
        "a Roboflow workflow (workspace_name + workflow_id), an inline workflow_spec (validated before deploy), "
        "or a simple model_id (wrapped into a detection + tracking workflow).",
        StartPipelineArgs,
        _not_yet,
    )
    reg.register(
        "get_pipeline_results",
        "Get the latest results from a pipeline as a short summary. Set include_frame=true for an annotated snapshot.",
        GetResultsArgs,
        _not_yet,
    )
    reg.register("list_pipelines", "List all video processing pipelines with their status.", NoArgs, _not_yet)
    reg.register("stop_pipeline", "Stop a video pipeline (by id or name).", PipelineRef, _not_yet)
    reg.register("pause_pipeline", "Pause a running pipeline (can be resumed).", PipelineRef, _not_yet)
    reg.register("resume_pipeline", "Resume a paused pipeline.", PipelineRef, _not_yet)
