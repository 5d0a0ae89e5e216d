"""`/vision list|start|stop|pause|resume|snapshot`: pipelines from the command line."""

from __future__ import annotations

from bot.agent.tools import ToolContext
from bot.backends.base import PipelineHandle
from bot.backends.summary import summarize
from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.media.cameras import find_camera, named_zones
from bot.media.redaction import redact
from bot.media.resolve import resolve_video
from bot.pipelines.analytics import NEEDS_MODEL, check_syntax, compose
from bot.pipelines.naming import default_name
from bot.pipelines.status import status_line
from bot.services import Services

DEFAULT_MODEL = "builtin/people"
START_USAGE = ("Usage: `/vision start SOURCE [model=ID | workflow=WORKSPACE/ID] [fps=N] [name=NAME] "
               "[line=X1,Y1,X2,Y2|middle [anchor=feet|centre|top]] [zone=X1,Y1,X2,Y2,X3,Y3,...|ZONE_NAME] [backend=direct|http|webrtc]`")


def bullet(h: PipelineHandle) -> str:
    return "• " + status_line(h, markdown=True)


async def list_pipelines(ctx: CommandContext) -> CommandReply:
    handles = await ctx.manager().list()
    if not handles:
        return CommandReply("No pipelines. Start one with `/vision start SOURCE`.")
    return CommandReply("*Pipelines*\n" + "\n".join(bullet(h) for h in handles))


def _fps(raw: str) -> float:
    try:
        fps = float(raw)
    except ValueError:
        fps = 0.0
    if not fps > 0:
        raise ValueError(f"fps must be a positive number, not {raw!r}.")
    return fps


async def launch(ref: str, opts: dict[str, str], ctx: CommandContext) -> tuple[PipelineHandle, str]:
    """Start a pipeline on `ref` with `start`'s options (the REST API calls this too): (handle, what it runs).

    Raises ValueError / MediaError / BackendError with one line; the source passes resolve_video's checks.
    """
    if "model" in opts and "workflow" in opts:
        raise ValueError("Give either model= or workflow=, not both.")
    if ("line" in opts or "zone" in opts) and "workflow" in opts:
        raise ValueError(NEEDS_MODEL)
    zones = named_zones(ctx.workspace, ctx.settings)
    check_syntax(opts.get("line"), opts.get("zone"), zones, opts.get("anchor"))  # refused before the source opens
    fps = _fps(opts["fps"]) if "fps" in opts else None
    workspace_name = workflow_id = None
    if "workflow" in opts:
        workspace_name, _, workflow_id = opts["workflow"].partition("/")
        if not workspace_name or not workflow_id:
            raise ValueError("workflow= takes WORKSPACE/WORKFLOW_ID, e.g. workflow=my-ws/ppe-check.")
    tctx = ToolContext(settings=ctx.settings, services=Services(workspace=ctx.workspace))
    source = resolve_video(ref, tctx)
    camera = ref if find_camera(ctx.workspace, ctx.settings, ref) else None
    mgr = ctx.manager()
    model = None if workflow_id else opts.get("model", DEFAULT_MODEL)
    extra = await compose(model, source, opts.get("line"), opts.get("zone"), zones, opts.get("anchor"))
    handle = await mgr.start(
        source, opts.get("name") or default_name(source, camera, mgr), model_id=model, workflow_spec=extra.spec,
        workspace_name=workspace_name, workflow_id=workflow_id, max_fps=fps, backend=opts.get("backend"),
    )
    what = f"workflow {workspace_name}/{workflow_id}" if workflow_id else f"model `{model}`"
    return handle, what + extra.describe() + (f" at {fps:g} fps" if fps else "")


async def start(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"model", "workflow", "fps", "name", "line", "anchor", "zone", "backend"})
    if len(args) != 1:
        return fail(START_USAGE)
    handle, what = await launch(args[0], opts, ctx)
    if handle.status == "error":
        return fail(f"*{handle.name}* could not start on {handle.video_reference}: {redact(handle.error or 'source failed')}.")
    return CommandReply(f"Started *{handle.name}* `{handle.pipeline_id}` on {handle.video_reference} with {what} — {handle.status}.")


async def control(verb: str, tokens: list[str], ctx: CommandContext) -> CommandReply:
    """stop / pause / resume one pipeline by name or id, or `all` of them."""
    if len(tokens) != 1:
        return fail(f"Usage: `/vision {verb} NAME_OR_ID|all`")
    mgr = ctx.manager()
    if tokens[0].lower() == "all":
        done = await mgr.control_all(verb)
        if not done:
            return CommandReply(f"No pipelines to {verb}.")
        return CommandReply("\n".join(bullet(h) for h in done))
    handle = await getattr(mgr, verb)(tokens[0])
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
