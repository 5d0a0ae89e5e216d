"""The `/vision` command core, shared by the CLI REPL and the Slack slash command (no Slack imports here)."""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bot.backends.base import BackendError, PipelineHandle
from bot.backends.workflows import detection_workflow
from bot.commands_line import parse_line, resolve_line
from bot.media import MediaError, resolve_video
from bot.media_cameras import cameras, find_camera
from bot.pipelines import PipelineNotFound
from bot.redaction import redact
from bot.summarize import summarize

if TYPE_CHECKING:
    from bot.alerts import AlertRouter
    from bot.config import Settings
    from bot.pipelines import PipelineManager

log = logging.getLogger(__name__)

DEFAULT_MODEL = "builtin/people"
USAGE = """*Usage:* `/vision <command>`
• `help` — this text
• `list` — pipelines and their status
• `start SOURCE [model=ID | workflow=WORKSPACE/ID] [fps=N] [name=NAME] [line=X1,Y1,X2,Y2|middle]` — SOURCE is a camera name from CAMERAS.md, an rtsp/http URL, a webcam index or a video file (default model `builtin/people`); line= counts objects crossing that line (pixels; `middle` = vertical through the centre)
• `stop|pause|resume NAME_OR_ID|all`
• `snapshot NAME_OR_ID` — the latest annotated frame
• `route CHANNEL [camera=NAME]` — send alerts (for one camera) to CHANNEL
• `rule CAMERA line | appears [CLASS] | count CLASS>N | zone SECONDS [cooldown=SECONDS]` — alert on that (CAMERA `*` = all)
• `rules [CAMERA]` — the rules that run · `unrule CAMERA RULE_ID` — remove one
• `schedule summary at HH:MM` | `schedule snapshot CAMERA every hour|every N minutes|at HH:MM` | `schedule heartbeat every N minutes` [name=NAME]
• `jobs` — scheduled jobs and their next run · `unschedule NAME` — remove one
• `status` — pipelines, alert routes, mutes, rules and jobs"""
CONTROL = {"start", "stop", "pause", "resume", "route", "rule", "unrule", "schedule", "unschedule"}
LOCAL_CHANNEL = "cli"  # channel_id the CLI REPL passes
_CHANNEL_REF = re.compile(r"^<#(?P<id>[A-Z0-9]+)(?:\|[^>]*)?>$")


@dataclass(frozen=True)
class CommandReply:
    """What to show: text (simple markdown), optionally a frame to upload (to post_channel in Slack)."""

    text: str
    frame: bytes | None = None
    frame_caption: str = ""
    ok: bool = True
    post_channel: str | None = None


@dataclass
class CommandContext:
    """Who asks and what they may touch. `pipelines` may be a manager or a zero-argument factory of one."""

    settings: Settings
    pipelines: PipelineManager | Callable[[], PipelineManager] | None = None
    router: AlertRouter | None = None
    workspace: Any = None
    user_id: str | None = None
    channel_id: str | None = None
    monitor: Any = None  # bot.monitor.Monitor: `rule`, `rules`, `unrule`
    scheduler: Any = None  # bot.scheduler.Scheduler: `schedule`, `jobs`, `unschedule`

    def manager(self) -> PipelineManager:
        from bot.pipelines import PipelineManager

        if self.pipelines is not None and not isinstance(self.pipelines, PipelineManager):
            self.pipelines = self.pipelines()  # created on first use: the backend import is slow
        if self.pipelines is None:
            raise BackendError("pipelines are not available in this process.")
        return self.pipelines


def fail(text: str) -> CommandReply:
    return CommandReply(text=text, ok=False)


def _refusal(ctx: CommandContext) -> str | None:
    """Why this user/channel may not change pipelines, rules or schedules, or None. Empty allowlists mean everyone."""
    users, channels = ctx.settings.slack.allowed_users, ctx.settings.slack.allowed_channels
    if ctx.channel_id in (None, LOCAL_CHANNEL):
        return None  # the local CLI: whoever runs the process owns it; the allowlists are Slack's
    if users and ctx.user_id not in users:
        who = ", ".join(f"<@{u}>" for u in users)
        return f"Only {who} may change pipelines, rules and schedules; ask one of them."
    if channels and ctx.channel_id not in channels:
        where = ", ".join(f"<#{c}>" for c in channels)
        return f"Pipelines, rules and schedules can only be changed from {where}."
    return None


def parse_options(tokens: list[str], allowed: set[str]) -> tuple[list[str], dict[str, str]]:
    args, opts = [], {}
    for tok in tokens:
        key, eq, val = tok.partition("=")
        if eq:
            if key.lower() not in allowed:
                raise ValueError(f"unknown option {key}=; allowed: {', '.join(sorted(allowed)) or 'none'}")
            opts[key.lower()] = val
        else:
            args.append(tok)
    return args, opts


def _line(h: PipelineHandle) -> str:
    err = f" — {h.error}" if h.error else ""
    return f"• *{h.name}* `{h.pipeline_id}` — {h.status}, {h.frames} frames, {redact(h.video_reference)}{err}"


async def _list(ctx: CommandContext) -> CommandReply:
    handles = await ctx.manager().list()
    if not handles:
        return CommandReply("No pipelines. Start one with `/vision start SOURCE`.")
    return CommandReply("*Pipelines*\n" + "\n".join(_line(h) for h in handles))


def _default_name(source: str, camera: str | None, mgr: PipelineManager) -> str:
    if camera:
        base = camera
    elif "://" in source:
        base = urlsplit(source).hostname or "stream"
    elif source.isdigit():
        base = f"webcam{source}"
    else:
        base = Path(source).stem or "video"
    taken = {h.name.lower() for h in mgr.snapshot() if h.status in ("starting", "running", "paused")}
    name, n = base, 2
    while name.lower() in taken:
        name, n = f"{base}-{n}", n + 1
    return name


async def _start(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"model", "workflow", "fps", "name", "line"})
    if len(args) != 1:
        return fail("Usage: `/vision start SOURCE [model=ID | workflow=WORKSPACE/ID] [fps=N] [name=NAME] [line=X1,Y1,X2,Y2|middle]`")
    if "model" in opts and "workflow" in opts:
        return fail("Give either model= or workflow=, not both.")
    if "line" in opts and "workflow" in opts:
        return fail("line= works with model=, not workflow=; add a line counter step to the workflow instead.")
    if "line" in opts:
        parse_line(opts["line"])  # bad syntax is refused before the source is opened
    fps = None
    if "fps" in opts:
        try:
            fps = float(opts["fps"])
            assert fps > 0
        except (ValueError, AssertionError):
            return fail(f"fps must be a positive number, not {opts['fps']!r}.")
    workspace_name = workflow_id = None
    if "workflow" in opts:
        workspace_name, _, workflow_id = opts["workflow"].partition("/")
        if not workspace_name or not workflow_id:
            return fail("workflow= takes WORKSPACE/WORKFLOW_ID, e.g. workflow=my-ws/ppe-check.")
    from tools.base import ToolContext

    tctx = ToolContext(settings=ctx.settings, services={"workspace": ctx.workspace})
    source = resolve_video(args[0], tctx)
    camera = args[0] if find_camera(ctx.workspace, ctx.settings, args[0]) else None
    mgr = ctx.manager()
    model = None if workflow_id else opts.get("model", DEFAULT_MODEL)
    line = await resolve_line(opts["line"], source) if "line" in opts else None
    spec = detection_workflow(model, line=line) if line and model else None  # the counter needs a composed spec
    handle = await mgr.start(
        source, opts.get("name") or _default_name(source, camera, mgr), model_id=model, workflow_spec=spec,
        workspace_name=workspace_name, workflow_id=workflow_id, max_fps=fps,
    )
    if handle.status == "error":
        return fail(f"*{handle.name}* could not start on {handle.video_reference}: {redact(handle.error or 'source failed')}.")
    what = f"workflow {workspace_name}/{workflow_id}" if workflow_id else f"model `{model}`"
    what += f", counting crossings of the line ({line[0][0]},{line[0][1]})→({line[1][0]},{line[1][1]})" if line else ""
    rate = f" at {fps:g} fps" if fps else ""
    return CommandReply(f"Started *{handle.name}* `{handle.pipeline_id}` on {handle.video_reference} with {what}{rate} — {handle.status}.")


async def _control(verb: str, tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) != 1:
        return fail(f"Usage: `/vision {verb} NAME_OR_ID|all`")
    mgr = ctx.manager()
    if tokens[0].lower() == "all":
        targets = [h for h in mgr.snapshot() if h.status in ("starting", "running", "paused", "error")]
        if verb == "stop":
            done = await mgr.stop_all()
        else:
            done = [await getattr(mgr, verb)(h.pipeline_id) for h in targets if h.status in ("running", "paused", "starting")]
        if not done:
            return CommandReply(f"No pipelines to {verb}.")
        return CommandReply("\n".join(_line(h) for h in done))
    handle = await getattr(mgr, verb)(tokens[0])
    past = {"stop": "Stopped", "pause": "Paused", "resume": "Resumed"}[verb]
    return CommandReply(f"{past} *{handle.name}* `{handle.pipeline_id}` — {handle.status}.")


async def _snapshot(tokens: list[str], ctx: CommandContext) -> CommandReply:
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


def _channel(raw: str) -> str:
    m = _CHANNEL_REF.match(raw)
    return m["id"] if m else raw


async def _route(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"camera"})
    if len(args) != 1:
        return fail("Usage: `/vision route CHANNEL [camera=NAME]`")
    if ctx.router is None:
        return fail("Alert routing is not available in this process.")
    channel, camera = _channel(args[0]), opts.get("camera")
    ctx.router.set_route(channel, camera)
    return CommandReply(f"Alerts {'from *' + camera + '*' if camera else 'from all cameras'} now go to {args[0]}.")


async def _status(ctx: CommandContext) -> CommandReply:
    lines = ["*Status*"]
    try:
        handles = await ctx.manager().list()
    except BackendError as exc:
        handles, lines = [], lines + [f"Pipelines unavailable: {exc}"]
    lines += [_line(h) for h in handles] or ["No pipelines."]
    if ctx.router is not None:
        routes = ctx.router.routes()
        default = ctx.router.default_channel
        lines.append("*Alert routes*: " + (", ".join(f"{cam} → {ch}" for cam, ch in sorted(routes.items()))
                                           or f"none (default channel: {default or 'not set'})"))
        names = set(cameras(ctx.workspace, ctx.settings)) | {h.name for h in handles} | set(routes) | {"*"}
        muted = [(n, ctx.router.muted_until(n)) for n in sorted(names)]
        muted = [f"{n} until {_clock(u)}" for n, u in muted if u]
        lines.append("*Muted*: " + (", ".join(muted) or "nothing"))
    from bot.commands_monitoring import rules_status
    from bot.commands_schedule import jobs_status

    return CommandReply("\n".join(lines + rules_status(ctx) + jobs_status(ctx)))


def _clock(ts: float) -> str:
    import time

    return time.strftime("%H:%M UTC", time.gmtime(ts))


_MONITORING = {"rule", "rules", "unrule", "schedule", "jobs", "unschedule"}


async def _monitoring(verb: str, tokens: list[str], ctx: CommandContext) -> CommandReply:
    from bot import commands_monitoring as rules  # they import this module
    from bot import commands_schedule as jobs

    handler = {"rule": rules.add_rule, "rules": rules.list_rules, "unrule": rules.remove_rule,
               "schedule": jobs.add_job, "jobs": jobs.list_jobs, "unschedule": jobs.remove_job}[verb]
    return await handler(tokens, ctx)


async def run_command(text: str, ctx: CommandContext) -> CommandReply:
    """Run one `/vision` command line (with or without the `/vision` prefix); never raises."""
    try:
        tokens = shlex.split(text or "")
    except ValueError:
        return CommandReply(USAGE, ok=False)
    if tokens and tokens[0].lower() == "/vision":
        tokens = tokens[1:]
    verb = tokens[0].lower() if tokens else "help"
    if verb in CONTROL and (refusal := _refusal(ctx)):
        return fail(refusal)
    try:
        if verb == "help":
            return CommandReply(USAGE)
        if verb == "list":
            return await _list(ctx)
        if verb == "status":
            return await _status(ctx)
        if verb == "start":
            return await _start(tokens[1:], ctx)
        if verb in ("stop", "pause", "resume"):
            return await _control(verb, tokens[1:], ctx)
        if verb == "snapshot":
            return await _snapshot(tokens[1:], ctx)
        if verb == "route":
            return await _route(tokens[1:], ctx)
        if verb in _MONITORING:
            return await _monitoring(verb, tokens[1:], ctx)
    except (BackendError, MediaError, PipelineNotFound, ValueError, LookupError) as exc:
        return fail(redact(str(exc)))
    except Exception as exc:  # the command line must never crash the REPL or the Slack handler
        log.exception("/vision %s failed", verb)
        return fail(f"/vision {verb} failed: {type(exc).__name__}: {redact(str(exc))}")
    return CommandReply(f"Unknown command {verb!r}.\n{USAGE}", ok=False)
