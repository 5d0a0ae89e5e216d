"""Single-image vision tools: run_inference, ask_about_image, detect_zero_shot."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from bot.agent.quoting import quote_data
from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.backends.base import BackendError, InferenceResult
from bot.backends.summary import summarize
from bot.media.images import resize_jpeg
from bot.media.redaction import redact
from bot.media.resolve import MediaError, attachment_for, resolve_image
from bot.objects.text import defang
from bot.services import need

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
    confidence: float | None = Field(None, ge=0, le=1, description="Confidence threshold (default: the model's own, "
                                     "as in a pipeline: builtin/people 0.5, Roboflow models 0.4)")
    include_frame: bool = Field(True, description="Return and show the annotated frame")


class AskAboutImageArgs(ToolArgs):
    image: str = Field(description=IMAGE_HELP)
    question: str = Field(description="Question to ask about the image")
    model: str = Field("florence2", description="'florence2', 'qwen2.5-vl', 'paligemma', or 'claude' (your own vision)")


class DetectZeroShotArgs(ToolArgs):
    image: str = Field(description=IMAGE_HELP)
    class_names: list[str] = Field(min_length=1, description="Objects to detect, e.g. ['person', 'hard hat']")
    confidence: float = Field(0.3, ge=0, le=1)


ZERO_SHOT_MODEL = "yolo_world/v2-s"
VLM_MODELS = ("florence2", "qwen2.5-vl", "paligemma", "claude")
LOCAL_MODELS = "run_inference with model_id='builtin/faces' or 'builtin/people'"


def _errors(exc: Exception) -> ToolResult:
    """Expected failures (bad reference, backend, missing service) as one line the model can act on."""
    return ToolResult.error(redact(str(exc)))


async def _image(ref: str, ctx: ToolContext) -> bytes:
    return await asyncio.to_thread(resolve_image, ref, ctx)


def _label(ref: str, ctx: ToolContext) -> str:
    """A short name for the image in summaries, captions and alt text: an attachment's name as its sender gave it
    (the Slack file id the saved copy carries for uniqueness is not for people), a file's name, or 'image'."""
    if ref.startswith("data:") or len(ref) > 200:
        return "image"
    att = attachment_for(ref, ctx)
    name = (att.name or att.path.name) if att is not None else ref.rsplit("/", 1)[-1]
    # the sender chose it: one line, no marker of ours, bounded (it goes into the tool result and the captions)
    return defang(" ".join(redact(name).split()))[:60] or "image"


def _with_frame(text: str, result: InferenceResult, include_frame: bool, caption: str) -> ToolResult:
    """The summary for the model, the boxes for doors that hand structure on (REST, MCP), the frame if asked."""
    if include_frame and result.frame:
        return ToolResult(text=text, image=result.frame, frame=result.frame, frame_caption=caption, data=result.as_data())
    return ToolResult(text=text, data=result.as_data())


async def run_inference(args: RunInferenceArgs, ctx: ToolContext) -> ToolResult:
    if not (args.model_id or args.workflow_spec or args.workflow_id):
        return ToolResult.error(
            "Say what to run: model_id ('builtin/faces', 'builtin/people' or 'workspace/project/version'), "
            "workspace_name + workflow_id, or workflow_spec. To describe an image, use ask_about_image."
        )
    if args.workflow_id and not args.workspace_name:
        return ToolResult.error("workflow_id needs workspace_name (the Roboflow workspace that owns it).")
    try:
        image = await _image(args.image, ctx)
        # An inline spec is safety-checked by the backend (bot/backends/policy), for every caller alike.
        backend = await need(ctx.services.backend, "the inference backend").aget()
        result = await backend.run_single(
            image, model_id=args.model_id, workflow_spec=args.workflow_spec, workspace_name=args.workspace_name,
            workflow_id=args.workflow_id, parameters=args.parameters,
            # None: the model's own default, as a pipeline on the same frames runs it (one detector, one behaviour)
            confidence=args.confidence,
        )
    except (MediaError, BackendError, LookupError) as exc:
        return _errors(exc)
    text = summarize(result, label=_label(args.image, ctx))
    return _with_frame(text, result, args.include_frame, text)


def zero_shot_workflow(class_names: list[str], confidence: float) -> dict[str, Any]:
    """A one-step YOLO-World workflow (needs the model weights: online, or cached on the inference server)."""
    return {
        "version": "1.0",
        "inputs": [{"type": "WorkflowImage", "name": "image"}],
        "steps": [{
            "type": "roboflow_core/yolo_world_model@v1", "name": "yolo_world", "images": "$inputs.image",
            "class_names": list(class_names), "version": ZERO_SHOT_MODEL.split("/", 1)[1], "confidence": confidence,
        }],
        "outputs": [{"type": "JsonField", "name": "predictions", "selector": "$steps.yolo_world.predictions"}],
    }


async def detect_zero_shot(args: DetectZeroShotArgs, ctx: ToolContext) -> ToolResult:
    try:
        image = await _image(args.image, ctx)
        backend = await need(ctx.services.backend, "the inference backend").aget()
    except (MediaError, LookupError) as exc:
        return _errors(exc)
    try:
        result = await asyncio.wait_for(
            backend.run_single(image, workflow_spec=zero_shot_workflow(args.class_names, args.confidence),
                               confidence=args.confidence),
            timeout=ctx.settings.inference.request_timeout,
        )
    except (TimeoutError, BackendError) as exc:
        why = redact(str(exc)) or "timed out"
        return ToolResult.error(
            f"YOLO-World ({ZERO_SHOT_MODEL}) is not reachable here: {why}. Use {LOCAL_MODELS} for faces/people, "
            "or ask_about_image to look for other objects."
        )
    text = summarize(result, label=f"zero-shot {', '.join(args.class_names)[:60]}")
    return _with_frame(text, result, True, text)


def vlm_workflow(model: str, question: str) -> dict[str, Any] | None:
    """A one-step VLM workflow, or None if this inference version has no block for `model`.

    Florence-2 is a captioner, not a VQA model: it gets a detailed-caption task and the caller answers from it.
    """
    if model == "florence2":
        step = {"type": "roboflow_core/florence_2@v1", "task_type": "more-detailed-caption",
                "model_version": "florence-2-base"}
    elif model == "qwen2.5-vl":
        step = {"type": "roboflow_core/qwen25vl@v1", "prompt": question}
    else:
        return None
    step.update({"name": "vlm", "images": "$inputs.image"})
    return {
        "version": "1.0",
        "inputs": [{"type": "WorkflowImage", "name": "image"}],
        "steps": [step],
        "outputs": [{"type": "JsonField", "name": "answer", "selector": "$steps.vlm.*"}],
    }


def _answer_text(values: dict[str, Any]) -> str | None:
    """The first non-empty string among the workflow outputs (the VLM's answer)."""
    stack: list[Any] = [values]
    while stack:
        item = stack.pop(0)
        if isinstance(item, str) and item.strip():
            return item.strip()
        if isinstance(item, dict):
            stack.extend(item[k] for k in sorted(item, key=lambda k: k not in ("output", "raw_output", "answer")))
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def _own_vision(image: bytes, question: str, reason: str, ctx: ToolContext) -> ToolResult:
    try:
        # the model reads it: as small as frames it is shown (640 px) unless frames are capped smaller
        jpeg = resize_jpeg(image, min(640, ctx.settings.monitoring.result_image_max_dimension or 640))
    except ValueError:
        return _errors(MediaError("the image could not be decoded; send a JPEG or PNG."))
    return ToolResult(text=f"{reason}Answer the question from this image yourself: {question}", image=jpeg)


async def ask_about_image(args: AskAboutImageArgs, ctx: ToolContext) -> ToolResult:
    try:
        image = await _image(args.image, ctx)
    except MediaError as exc:
        return _errors(exc)
    model = args.model.strip().lower()
    if model not in VLM_MODELS:
        return ToolResult.error(f"unknown model {args.model!r}; use one of: {', '.join(VLM_MODELS)}.")
    provider = ctx.services.backend
    spec = vlm_workflow(model, args.question)
    if model == "claude" or provider is None:
        return _own_vision(image, args.question, "", ctx)
    if spec is None:
        return _own_vision(image, args.question, f"{args.model} has no block in this inference version. ", ctx)
    try:
        result = await asyncio.wait_for((await provider.aget()).run_single(image, workflow_spec=spec),
                                        timeout=ctx.settings.inference.request_timeout)
        answer = _answer_text(result.values)
    except (TimeoutError, BackendError) as exc:
        why = redact(str(exc)).split(". ")[0] or "timed out"
        return _own_vision(image, args.question, f"{args.model} is not available ({why}). ", ctx)
    if not answer:
        return _own_vision(image, args.question, f"{args.model} gave no answer. ", ctx)
    # What a model read off the image (a sign, a sticker, a screen) is data: quoted, so it is described, not obeyed.
    if model == "florence2":
        return ToolResult(text="Florence-2 detailed caption:\n" + quote_data("image caption", answer[:1500])
                          + f"\nUse it to answer: {args.question}")
    return ToolResult(text=f"{args.model} answered:\n" + quote_data("answer about the image", answer[:1500]))


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
