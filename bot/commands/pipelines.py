"""`/vision list|start|stop|pause|resume|snapshot`: pipelines from the command line."""

from __future__ import annotations

from bot.backends.base import PipelineHandle
from bot.backends.summary import summarize
from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.media.redaction import redact
from bot.pipelines.request import from_options
from bot.pipelines.start import start as start_pipeline
from bot.pipelines.status import status_line

START_USAGE = ("Usage: `/vision start SOURCE [model=ID | workflow=WORKSPACE/ID] [fps=N] [name=NAME] "
               "[line=X1,Y1,X2,Y2|middle [anchor=feet|centre|top]] [zone=X1,Y1,X2,Y2,X3,Y3,...|ZONE_NAME] [backend=direct|http|webrtc]`")


def bullet(h: PipelineHandle) -> str:
    return "• " + status_line(h, markdown=True)


async def list_pipelines(ctx: CommandContext) -> CommandReply:
    handles = await ctx.manager().list()
    if not handles:
        return CommandReply("No pipelines. Start one with `/vision start SOURCE`.")
    return CommandReply("*Pipelines*\n" + "\n".join(bullet(h) for h in handles))


async def start(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"model", "workflow", "fps", "name", "line", "anchor", "zone", "backend"})
    if len(args) != 1:
        return fail(START_USAGE)
    started = await start_pipeline(from_options(args[0], opts), ctx.manager(), ctx, ctx.requester)  # the one start: the tool's checks too
    handle = started.handle
    if handle.status == "error":
        return fail(f"*{handle.name}* could not start on {handle.video_reference}: {redact(handle.error or 'source failed')}.")
    return CommandReply(f"Started *{handle.name}* `{handle.pipeline_id}` on {handle.video_reference} with "
                        f"{started.describe()} — {handle.status}.")


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
