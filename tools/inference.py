"""Single-image vision tools: run_inference, ask_about_image, detect_zero_shot."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tools.base import ToolArgs, ToolContext, ToolResult
from tools.registry import ToolRegistry

IMAGE_HELP = (
    "Image: a file path (workspace, media folders, or an attached file), an http(s) URL, base64 data, "
    "or the Slack file id of an image shared in this conversation."
)


class RunInferenceArgs(ToolArgs):
    image: str = Field(description=IMAGE_HELP)
    model_id: str | None = Field(None, description="Model id: 'builtin/faces', 'builtin/people', or Roboflow 'workspace/project/version'")
    workspace_name: str | None = Field(None, description="Roboflow workspace, for a workflow by id")
    workflow_id: str | None = Field(None, description="Roboflow workflow id (with workspace_name)")
    workflow_spec: dict[str, Any] | None = Field(None, description="Inline workflow specification (JSON)")
    parameters: dict[str, Any] | None = Field(None, description="Extra workflow inputs")
    confidence: float | None = Field(None, ge=0, le=1, description="Confidence threshold (default 0.4)")
    include_frame: bool = Field(True, description="Return and show the annotated frame")


class AskAboutImageArgs(ToolArgs):
    image: str = Field(description=IMAGE_HELP)
    question: str = Field(description="Question to ask about the image")
    model: str = Field("florence2", description="'florence2', 'qwen2.5-vl', 'paligemma', or 'claude' (your own vision)")


class DetectZeroShotArgs(ToolArgs):
    image: str = Field(description=IMAGE_HELP)
    class_names: list[str] = Field(min_length=1, description="Objects to detect, e.g. ['person', 'hard hat']")
    confidence: float = Field(0.3, ge=0, le=1)


NOT_YET = "not available yet: the inference backend is not wired into this build"


async def run_inference(args: RunInferenceArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.error(f"run_inference is {NOT_YET}")


async def ask_about_image(args: AskAboutImageArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.error(f"ask_about_image is {NOT_YET}")


async def detect_zero_shot(args: DetectZeroShotArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.error(f"detect_zero_shot is {NOT_YET}")


def register(reg: ToolRegistry) -> None:
    reg.register(
        "run_inference",
        "Run inference on a single image using a model or workflow. Accepts a model_id "
        "('builtin/faces', 'builtin/people', or a Roboflow 'workspace/project/version'), or a workflow "
        "(workspace_name + workflow_id, or an inline workflow_spec). Returns a detection summary and, "
        "with include_frame, the annotated image.",
        RunInferenceArgs,
        run_inference,
    )
    reg.register(
        "ask_about_image",
        "Ask a vision-language model a question about an image. Uses Florence-2 / Qwen2.5-VL / PaliGemma "
        "when the inference server has them; otherwise the image is returned to you to answer with your own vision.",
        AskAboutImageArgs,
        ask_about_image,
    )
    reg.register(
        "detect_zero_shot",
        "Detect objects by text description without a trained model (YOLO-World). If YOLO-World is not "
        "reachable, use run_inference with a builtin model instead.",
        DetectZeroShotArgs,
        detect_zero_shot,
    )
