"""`/vision list|start|stop|pause|resume|snapshot`: pipelines from the command line."""

from __future__ import annotations

from bot.backends.base import InferenceResult, PipelineHandle
from bot.backends.summary import summarize
from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.media.redaction import redact
from bot.objects.pipeline import START_OPTIONS, PipelineSpec
from bot.objects.refusal import parse
from bot.pipelines.limits import at_start
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest, request_of
from bot.pipelines.start import control as control_pipelines
from bot.pipelines.start import start as start_pipeline
from bot.pipelines.status import status_line
from bot.pipelines.tally import Origin

START_USAGE = "Usage: `/vision start SOURCE " + " ".join(f"[{syntax}]" for syntax, _ in START_OPTIONS.values()) + "`"


def start_help(indent: str = "    ") -> str:
    """Every option `/vision start` takes, one a line, from the table its parser allows."""
    return "\n".join(f"{indent}`{syntax}` — {what}" for syntax, what in START_OPTIONS.values())


def bullet(h: PipelineHandle, mgr: PipelineManager, latest: InferenceResult | None = None) -> str:
    """One pipeline's status line: its totals, and with its latest result what it sees and whether it can count."""
    return "• " + status_line(h, markdown=True, latest=latest, tally=mgr.tally(h.pipeline_id))


def bullets(handles: list[PipelineHandle], mgr: PipelineManager) -> list[str]:
    return [bullet(h, mgr, mgr.latest(h.pipeline_id)) for h in handles]


async def list_pipelines(ctx: CommandContext) -> CommandReply:
    mgr = ctx.manager()
    handles = await mgr.list()
    if not handles:
        return CommandReply("No pipelines. Start one with `/vision start SOURCE`.")
    return CommandReply("*Pipelines*\n" + "\n".join(bullets(handles, mgr)))


async def start(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, set(START_OPTIONS))
    if len(args) != 1:
        return fail(START_USAGE)
    spec = parse(PipelineSpec, {"source": args[0], **opts})  # the one model, as every door (Refused: one line)
    request = request_of(spec, Origin(ctx.session_key, ctx.user_id, ctx.channel_id))
    mgr = ctx.manager()
    loaded = any(h.frames for h in mgr.snapshot())  # a pipeline has run here: inference and its detectors are loaded
    # the one start (the tool's checks too); once they pass, a line at once: a first start takes seconds
    started = await start_pipeline(request, mgr, ctx, ctx.requester, lambda: ctx.say(starting(request, loaded)))
    handle = started.handle
    if handle.status == "error":
        return fail(f"*{handle.name}* could not start on {handle.video_reference}: {redact(handle.error or 'source failed')}.")
    limit = at_start(started.request.model_id, started.request.max_fps)  # known before any frame: the rate asked
    return CommandReply(f"Started *{handle.name}* `{handle.pipeline_id}` on {handle.video_reference} with "
                        f"{started.describe()} — {handle.status}." + (f" ⚠️ {limit}." if limit else ""))


def starting(req: StartRequest, loaded: bool) -> str:
    """The line shown while a start runs, once its checks passed: the first in a process loads inference and the
    detector (~10 s). Worded as an attempt: the source can still fail to open, and the reply then says so."""
    what = f"model `{req.model_id}`" if req.model_id else f"workflow {req.workspace_name}/{req.workflow_id}"
    wait = "…" if loaded else ": opening the source and loading the detector, the first start takes 10-15 s…"
    return f"Starting {redact(req.source)} with {what}{wait}"


async def control(verb: str, tokens: list[str], ctx: CommandContext) -> CommandReply:
    """stop / pause / resume one pipeline by name or id, or `all` of them."""
    if len(tokens) != 1:
        return fail(f"Usage: `/vision {verb} NAME_OR_ID|all`")
    mgr = ctx.manager()
    done, note = await control_pipelines(mgr, verb, tokens[0], ctx.requester, ctx.settings)
    if tokens[0].lower() == "all":
        if not done:
            return CommandReply(f"No pipelines to {verb}.{note}")
        return CommandReply("\n".join(bullet(h, mgr) for h in done) + (f"\n{note.strip()}" if note else ""))
    handle = done[0]
    past = {"stop": "Stopped", "pause": "Paused", "resume": "Resumed"}[verb]
    return CommandReply(f"{past} *{handle.name}* `{handle.pipeline_id}` — {handle.status}.")


async def snapshot(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) != 1:
        return fail("Usage: `/vision snapshot NAME_OR_ID`")
    mgr = ctx.manager()
    handle = mgr.resolve(tokens[0])
    result = mgr.latest(handle.pipeline_id)
    if result is None or result.frame is None:
        return fail(f"No frame yet from *{handle.name}* ({handle.status}); try again in a few seconds.")
    caption = summarize(result, label=handle.name)
    return CommandReply(f"Latest frame from *{handle.name}*: {caption}", frame=result.frame,
                        frame_caption=caption, post_channel=ctx.channel_id)
