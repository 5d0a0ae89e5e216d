"""Pipeline tools: start, results, list, stop, pause, resume (by id or name)."""

from __future__ import annotations

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.backends.base import BackendError, InferenceResult, PipelineHandle
from bot.backends.summary import summarize, summarize_many
from bot.media.redaction import redact
from bot.media.resolve import MediaError
from bot.objects.pipeline import PipelineSpec
from bot.pipelines.limits import at_start, cannot_count
from bot.pipelines.manager import PipelineManager, PipelineNotFound
from bot.pipelines.request import request_of as spec_request
from bot.pipelines.start import control, start
from bot.pipelines.status import status_line
from bot.pipelines.tally import Origin
from bot.rights import CONTROLLED
from bot.services import need


class PipelineRef(ToolArgs):
    pipeline_id: str = Field(description="Pipeline id or name")


class ControlArgs(ToolArgs):
    pipeline_id: str = Field(description="Pipeline id or name, or 'all' for every pipeline")


class GetResultsArgs(PipelineRef):
    max_results: int = Field(5, ge=1, le=50)
    include_frame: bool = Field(False, description="Return and show the latest annotated frame")


class NoArgs(ToolArgs):
    pass


EXPECTED = (BackendError, MediaError, PipelineNotFound, LookupError, ValueError)


def _manager(ctx: ToolContext) -> PipelineManager:
    return need(ctx.services.pipelines, "pipelines")


def _describe(h: PipelineHandle, mgr: PipelineManager) -> str:
    """The shared status line with its totals and latest result (whether it can count reliably)."""
    return status_line(h, latest=mgr.latest(h.pipeline_id), tally=mgr.tally(h.pipeline_id))


async def start_pipeline(args: PipelineSpec, ctx: ToolContext) -> ToolResult:
    try:
        origin = Origin(ctx.session_key or None, ctx.requester.user_id, ctx.requester.channel_id)
        started = await start(spec_request(args, origin), _manager(ctx), ctx, ctx.requester)
    except EXPECTED as exc:
        return ToolResult.error(redact(str(exc)))
    handle = started.handle
    if handle.status == "error":
        return ToolResult.error(
            f"Pipeline '{handle.name}' could not start on {redact(handle.video_reference)}: "
            f"{redact(handle.error or 'the source could not be opened')}. Check the source and start it again."
        )
    rate = started.rate.describe() if started.rate else ""  # a camera's cap, or how a file is sampled (rate.py)
    limit = at_start(started.request.model_id, started.request.max_fps)
    return ToolResult(
        text=f"Pipeline '{handle.name}' started (id: {handle.pipeline_id}, status {handle.status}). Processing "
        f"{redact(handle.video_reference)} with {handle.workflow_description}{started.analytics.describe()}{rate}. "
        + (f"Tell the user: {limit}. " if limit else "") + "Check it with get_pipeline_results in a few seconds."
    )


async def get_pipeline_results(args: GetResultsArgs, ctx: ToolContext) -> ToolResult:
    try:
        mgr = _manager(ctx)
        handle = mgr.resolve(args.pipeline_id)
        results = await mgr.results(handle.pipeline_id, args.max_results)
        latest = mgr.latest(handle.pipeline_id) if args.include_frame else None
        handle = await mgr.status(handle.pipeline_id)
    except EXPECTED as exc:
        return ToolResult.error(redact(str(exc)))
    status = f"{handle.name} is {handle.status} ({handle.frames} frames so far)"
    if (tally := mgr.tally(handle.pipeline_id)) is not None and tally.text():
        status += f"; {tally.text()}"
    if handle.error:
        status += f"; error: {redact(handle.error)}"
    if handle.scaled:
        status += f"; {handle.scaled}"
    if note := cannot_count((mgr.latest(handle.pipeline_id) or InferenceResult()).values):
        status += f"; {note}"
    text = f"{status}. " + summarize_many(results, label="New results") if results else f"{status}. No new results since the last check."
    if latest is None and results:
        latest = results[-1]
    if not (args.include_frame and latest is not None and latest.frame):
        if args.include_frame:
            text += " No frame available yet."
        return ToolResult(text=text)
    caption = summarize(latest, label=handle.name)
    return ToolResult(text=f"{text}\nShown frame: {caption}", image=latest.frame, frame=latest.frame, frame_caption=caption)


async def list_pipelines(args: NoArgs, ctx: ToolContext) -> ToolResult:
    try:
        mgr = _manager(ctx)
        handles = await mgr.list()
    except EXPECTED as exc:
        return ToolResult.error(redact(str(exc)))
    if not handles:
        return ToolResult(text="No pipelines. Start one with start_pipeline.")
    return ToolResult(text="\n".join(_describe(h, mgr) for h in handles))


def _control(action: str):
    async def run(args: ControlArgs, ctx: ToolContext) -> ToolResult:
        try:
            mgr = _manager(ctx)
            done, note = await control(mgr, action, args.pipeline_id, ctx.requester, ctx.settings)  # its owner or an operator
        except EXPECTED as exc:
            return ToolResult.error(redact(str(exc)))
        return ToolResult(text=("\n".join(_describe(h, mgr) for h in done) or f"No pipelines to {action}.") + note)

    run.__name__ = f"{action}_pipeline"
    return run


stop_pipeline, pause_pipeline, resume_pipeline = _control("stop"), _control("pause"), _control("resume")


def register(reg: ToolRegistry) -> None:
    reg.register_operation("start_pipeline", start_pipeline)
    reg.register(
        "get_pipeline_results",
        "Get the latest results from a pipeline as a short summary. Set include_frame=true for an annotated snapshot.",
        GetResultsArgs,
        get_pipeline_results,
    )
    reg.register("list_pipelines", "List all video processing pipelines with their status.", NoArgs, list_pipelines)
    reg.register("stop_pipeline", "Stop a video pipeline (by id or name, or 'all'). It stays stopped after a restart.",
                 ControlArgs, stop_pipeline, changes=CONTROLLED)
    reg.register("pause_pipeline", "Pause a running pipeline (by id or name, or 'all'; can be resumed).", ControlArgs,
                 pause_pipeline, changes=CONTROLLED)
    reg.register("resume_pipeline", "Resume a paused pipeline (by id or name, or 'all').", ControlArgs, resume_pipeline,
                 changes=CONTROLLED)
