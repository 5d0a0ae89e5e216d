"""`/vision` command lines → the family that runs them; the allowlist for control verbs; never raises."""

from __future__ import annotations

import logging
import shlex
from dataclasses import replace

from bot.backends.base import BackendError
from bot.commands import cameras as camera_table
from bot.commands import digest, pipelines, recipes, rules, schedule, search, watches
from bot.commands.context import CommandContext, CommandReply, fail
from bot.commands.routing import route, routes_status
from bot.media.cameras import cameras, hide_camera_urls
from bot.media.redaction import redact
from bot.media.resolve import MediaError
from bot.media.sniff import STILL_TOOLS, VIDEO_TOOLS
from bot.objects.owner import is_operator
from bot.pipelines.manager import PipelineNotFound
from bot.pipelines.table import LIST_HINT
from bot.rights import CONTROLLED, refusal
from bot.storage import records

log = logging.getLogger(__name__)

USAGE = f"""*Usage:* `/vision <command>`
• `help` — this text
• `list` — pipelines and their status
• `cameras [CAMERA]` — which cameras can count: resolution, fps asked / delivered, people's height, light, motion, last frame, and what to change
• `start SOURCE [option=value …]` — SOURCE is a camera name from CAMERAS.md, an rtsp/http URL, a webcam index or a video file; the options:
{pipelines.start_help()}
• `stop|pause|resume NAME_OR_ID|all`
• `snapshot NAME_OR_ID` — the latest annotated frame
• `route CHANNEL [camera=NAME] [verify=on|hold|off]` — send alerts (for one camera) to CHANNEL; verify: the model checks each alert and it says what it saw (hold: post only what it saw)
• `rule CAMERA line | appears [CLASS] | count CLASS>N | zone SECONDS | near CLASS OTHER [GAP] | then CAMERA2 [CLASS] [SECONDS] [cooldown=SECONDS] [verify=yes|no]` — alert on that (CAMERA `*` = all)
• `rules [CAMERA]` — the rules that run · `unrule CAMERA RULE_ID` — remove one
• `watch CAMERA appears [CLASS] | count CLASS>N | count CLASS<N | line | zone SECONDS | absent CLASS SECONDS [for 2h] [confirm]` — tell me once when that happens (default for 2h, at most 24h; `confirm`: the model checks the frame first), then stop
• `watches [CAMERA]` — the watches that run · `unwatch WATCH_ID` — cancel one
• `schedule summary at HH:MM` | `schedule snapshot CAMERA every hour|every N minutes|at HH:MM` | `schedule heartbeat every N minutes` | `schedule digest at HH:MM|every N minutes` [name=NAME]
• `jobs` — scheduled jobs and their next run · `unschedule NAME` — remove one
• `recipes` — saved setups · `recipe save NAME [description]` — save this conversation's last setup · `recipe run NAME [key=value …]` — replay it without the model (e.g. source=cam2) · `recipe export NAME` — a standalone Python script · `recipe delete NAME`
• `digest [since] [camera=NAME]` — what happened since '2h', 'yesterday 18:00', an ISO time, or since you last wrote here
• `search WORDS [since=…] [until=…] [camera=NAME] [limit=N]` — the moments the event log holds that match, by words and meaning ('white van', 'someone walking left'), with their frames
• `status` — pipelines, alert routes, mutes, rules, watches and jobs"""
# The checks below /vision are shared with the agent's tools, whose hints name tools; a person typing /vision is told
# the command instead (one table, keyed by the very constants the messages are built from).
IN_COMMANDS = {LIST_HINT: "See `/vision list`, or start one with `/vision start SOURCE`.",
               STILL_TOOLS: "ask about it in a chat message with the image attached",
               VIDEO_TOOLS: "`/vision start PATH` runs a model over its frames"}
CONTROL = {"start", "stop", "pause", "resume", "route", "rule", "unrule", "schedule", "unschedule", "watch", "unwatch"}


async def status(ctx: CommandContext) -> CommandReply:
    """Pipelines, alert routes, mutes, rules, watches and jobs in one reply."""
    lines = ["*Status*"]
    try:
        mgr = ctx.manager()
        handles = await mgr.list()
    except BackendError as exc:
        handles, lines = [], lines + [f"Pipelines unavailable: {exc}"]
    lines += pipelines.bullets(handles, mgr) or ["No pipelines."]
    lines += await camera_table.cameras_status(ctx)
    lines += routes_status(ctx, (h.name for h in handles))
    lines += rules.rules_status(ctx) + watches.watches_status(ctx) + schedule.jobs_status(ctx)
    if (ctx.operator or is_operator(ctx.settings, ctx.requester)) and (kept := records.notes()):
        lines.append("*Stored data set aside at start-up* (kept under .state/): " + redact("; ".join(kept[:5])))
    return CommandReply("\n".join(lines))


async def _run(verb: str, args: list[str], ctx: CommandContext) -> CommandReply | None:
    if verb == "help":
        return CommandReply(USAGE)
    if verb == "list":
        return await pipelines.list_pipelines(ctx)
    if verb == "cameras":
        return await camera_table.list_cameras(args, ctx)
    if verb == "status":
        return await status(ctx)
    if verb == "start":
        return await pipelines.start(args, ctx)
    if verb in ("stop", "pause", "resume"):
        return await pipelines.control(verb, args, ctx)
    if verb == "snapshot":
        return await pipelines.snapshot(args, ctx)
    if verb == "route":
        return await route(args, ctx)
    family = {"rule": rules.add_rule, "rules": rules.list_rules, "unrule": rules.remove_rule,
              "schedule": schedule.add_job, "jobs": schedule.list_jobs, "unschedule": schedule.remove_job,
              "recipes": recipes.list_recipes, "recipe": recipes.recipe, "digest": digest.digest,
              "search": search.search,
              "watch": watches.add_watch, "watches": watches.list_watches, "unwatch": watches.remove_watch}
    return await family[verb](args, ctx) if verb in family else None


def in_commands(text: str) -> str:
    """An error line from a check shared with the tools, with its tool hints said as `/vision` commands."""
    for hint, said in IN_COMMANDS.items():
        text = text.replace(hint, said)
    return text


async def run_command(text: str, ctx: CommandContext) -> CommandReply:
    """Run one `/vision` command line (with or without the `/vision` prefix); never raises.

    Its one exit: a registered camera's URL is shown as `camera "NAME"` wherever a reply says it (the list, the
    status lines, an error naming the source), as the model's tools show it, then what is left is redacted. Whoever
    may use `/vision` sees which camera, never its address or a secret in a spelling the redactor does not know;
    the operator's listing of the URLs is `GET /api/cameras` (masked)."""
    reply = await _answer(text, ctx)
    try:
        cams = cameras(ctx.workspace, ctx.settings)
    except Exception:  # noqa: BLE001 - no registry to read (no workspace): the reply is still redacted
        log.warning("/vision: the camera registry could not be read", exc_info=True)
        cams = {}
    table = [[redact(hide_camera_urls(c, cams)) for c in row] for row in reply.table] if reply.table else None
    return replace(reply, text=redact(hide_camera_urls(reply.text, cams)),
                   frame_caption=redact(hide_camera_urls(reply.frame_caption, cams)), table=table)


async def _answer(text: str, ctx: CommandContext) -> CommandReply:
    try:
        tokens = shlex.split(text or "")
    except ValueError:
        return CommandReply(USAGE, ok=False)
    if tokens and tokens[0].lower() == "/vision":
        tokens = tokens[1:]
    verb = tokens[0].lower() if tokens else "help"
    if verb in CONTROL and (why := refusal(ctx.settings, ctx.requester, CONTROLLED)):
        return fail(why)
    try:
        reply = await _run(verb, tokens[1:], ctx)
    except (BackendError, MediaError, PipelineNotFound, ValueError, LookupError) as exc:
        return fail(in_commands(redact(str(exc))))
    except Exception as exc:  # the command line must never crash the REPL or the Slack handler
        log.exception("/vision %s failed", verb)
        return fail(f"/vision {verb} failed: {type(exc).__name__}: {redact(str(exc))}")
    return reply if reply is not None else CommandReply(f"Unknown command {verb!r}.\n{USAGE}", ok=False)
