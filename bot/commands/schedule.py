"""`/vision schedule|jobs|unschedule`: persisted cron jobs (summary, snapshot, heartbeat) from the command line."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.commands.rules import resolve_camera
from bot.scheduling.cron_jobs import CronJob
from bot.scheduling.when import parse_when

SCHEDULE_USAGE = ("Usage: `/vision schedule summary at HH:MM` | `/vision schedule snapshot CAMERA every hour|every N "
                  "minutes|at HH:MM` | `/vision schedule heartbeat every N minutes` | `/vision schedule digest at HH:MM|"
                  "every N minutes` [name=NAME] [to=#channel|MESSAGE_LINK]")
_LINK = re.compile(r"^<?https://[^/]+/archives/(?P<ch>[A-Z0-9]+)/p(?P<s>\d{10})(?P<us>\d{6})(?:[?|][^>]*)?>?$")
_CHANNEL_REF = re.compile(r"^<#(?P<ch>[A-Z0-9]+)(?:\|[^>]*)?>$")
_WHEN_EXAMPLE = "e.g. `at 18:00`, `every hour` or `every 15 minutes`"
_ACTIONS = {"summary": "daily_summary", "snapshot": "snapshot", "heartbeat": "heartbeat", "digest": "digest"}


def _scheduler(ctx: CommandContext) -> Any:
    if ctx.scheduler is None:
        raise LookupError("Scheduled jobs need the long-running bot: use them in `vision-agent chat` or "
                          "`vision-agent serve`.")
    return ctx.scheduler


def _when(words: list[str], what: str) -> dict[str, Any]:
    if not words:
        raise ValueError(f"Say when the {what} runs, {_WHEN_EXAMPLE}.")
    try:
        return parse_when(" ".join(words))
    except ValueError as exc:
        raise ValueError(f"{exc} ({_WHEN_EXAMPLE}).") from None


def _slug(when: dict[str, Any]) -> str:
    if when.get("at"):
        return when["at"]
    minutes = when["every_minutes"]
    return "hourly" if minutes == 60 else f"every-{minutes:g}min"


def _every(when: dict[str, Any]) -> str:
    return f"daily at {when['at']}" if when.get("at") else f"every {when['every_minutes']:g} min"


def parse_schedule(args: list[str], ctx: CommandContext) -> tuple[str, str, dict[str, Any], str | None]:
    """(job name, action, when fields, camera) from `summary at HH:MM` / `snapshot CAMERA WHEN` / `heartbeat WHEN` /
    `digest WHEN`."""
    what = args[0].lower() if args else ""
    if what not in _ACTIONS:
        raise ValueError(SCHEDULE_USAGE)
    camera = None
    if what == "snapshot":
        if len(args) < 2:
            raise ValueError("Say which camera, e.g. `/vision schedule snapshot dock every hour`.")
        camera = resolve_camera(args[1], ctx, allow_all=False)
        when = _when(args[2:], "snapshot")
    else:
        when = _when(args[1:], what)
    if what == "summary" and not when.get("at"):
        raise ValueError("The summary runs once a day: say `/vision schedule summary at 18:00`.")
    if what == "heartbeat" and when.get("at"):
        raise ValueError("The heartbeat repeats: say `/vision schedule heartbeat every 15 minutes`.")
    name = "-".join(p for p in (what, camera, _slug(when)) if p)
    return name, _ACTIONS[what], when, camera


async def add_job(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"name", "to"})
    if not args:
        return fail(SCHEDULE_USAGE)
    scheduler = _scheduler(ctx)
    name, action, when, camera = parse_schedule(args, ctx)
    channel, thread_ts = parse_target(opts["to"]) if "to" in opts else (None, None)
    job = scheduler.add_job(opts.get("name") or name, action, camera=camera, channel=channel, thread_ts=thread_ts,
                            **when)
    what = {"daily_summary": "Daily summary", "heartbeat": "Heartbeat",
            "digest": "Digest of what happened since the last one"}.get(action, f"Snapshot of *{camera}*")
    text = f"{what} {_every(when)} as job `{job.name}` (next {next_run(ctx, job)})."
    hb = ctx.settings.heartbeat
    if action == "heartbeat" and hb.enabled and hb.interval_minutes > 0:
        text += (f" The configured heartbeat (every {hb.interval_minutes:g} min) keeps running too; set "
                 "VISION_AGENT_HEARTBEAT_MINUTES=0 (heartbeat.interval_minutes) to make this the only one.")
    return CommandReply(text + f" Remove it with `/vision unschedule {job.name}`.")


async def list_jobs(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if tokens:
        return fail("Usage: `/vision jobs`")
    jobs = _scheduler(ctx).jobs()
    if not jobs:
        return CommandReply("No scheduled jobs. Add one with `/vision schedule summary at 18:00`.")
    return CommandReply("*Jobs*\n" + "\n".join(_job_line(ctx, j) for j in sorted(jobs, key=lambda j: j.name)))


def parse_target(raw: str) -> tuple[str, str | None]:
    """`to=`: a channel (`#ops`, `<#C1|ops>`, `C1`) or a Slack message link (its thread) -> (channel, thread_ts)."""
    if m := _LINK.match(raw):
        return m["ch"], f"{m['s']}.{m['us']}"
    if m := _CHANNEL_REF.match(raw):
        return m["ch"], None
    if re.match(r"^#?[\w.-]{1,80}$", raw):
        return raw, None
    raise ValueError(f"to= takes a channel (#ops) or a message link (Copy link on a message), not {raw!r}.")


def _job_line(ctx: CommandContext, job: CronJob) -> str:
    of = f" of {job.camera}" if job.camera else ""
    when = f"daily at {job.at}" if job.at else f"every {job.every_minutes:g} min"
    to = f" to {job.channel}" + (" (thread)" if job.thread_ts else "") if job.channel else ""
    return f"• `{job.name}` — {job.action}{of}{to}, {when}; next {next_run(ctx, job)}"


async def remove_job(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) != 1:
        return fail("Usage: `/vision unschedule NAME` (see `/vision jobs` for the names)")
    scheduler = _scheduler(ctx)
    if scheduler.remove_job(tokens[0]):
        return CommandReply(f"Removed job `{tokens[0]}`.")
    names = ", ".join(f"`{j.name}`" for j in scheduler.jobs()) or "none"
    return fail(f"No job named `{tokens[0]}`; the jobs are: {names}.")


def next_run(ctx: CommandContext, job: CronJob) -> str:
    """When a job runs next, in the heartbeat time zone, e.g. 'Sun 18:00 UTC'."""
    if not job.enabled:
        return "never (disabled)"
    tz = ZoneInfo(ctx.settings.heartbeat.timezone)
    lookup = getattr(ctx.scheduler, "next_run", None)
    when: datetime | None = lookup(job.name) if lookup else None
    if when is None and job.at:  # the scheduler thread is not running here: the daily time is still known
        now = datetime.now(tz)
        hh, mm = (int(x) for x in job.at.split(":"))
        when = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        when += timedelta(days=1) if when <= now else timedelta()
    if when is None:
        return f"within {job.every_minutes:g} min once the scheduler runs"
    return f"{when.astimezone(tz):%a %H:%M} {tz.key}"


def jobs_status(ctx: CommandContext) -> list[str]:
    """The status line about jobs (none when the scheduler does not run here)."""
    if ctx.scheduler is None:
        return []
    jobs = sorted(ctx.scheduler.jobs(), key=lambda j: j.name)
    return ["*Jobs*: " + (", ".join(f"{j.name} (next {next_run(ctx, j)})" for j in jobs) or "none")]
