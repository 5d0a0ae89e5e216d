"""`/vision schedule|jobs|unschedule`: persisted cron jobs (summary, snapshot, heartbeat) from the command line."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.backends.base import LIVE
from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.commands.rules import resolve_camera
from bot.commands.watches import answer_place
from bot.objects.caps import cap_refusal
from bot.objects.job import ACTIONS, JobSpec
from bot.objects.owner import Owner, change_refusal, is_operator
from bot.objects.refusal import parse
from bot.scheduling.cron_jobs import CronJob

SCHEDULE_USAGE = ("Usage: `/vision schedule summary at HH:MM` | `/vision schedule snapshot CAMERA every hour|every N "
                  "minutes|at HH:MM` | `/vision schedule heartbeat every N minutes` | `/vision schedule digest at HH:MM|"
                  "every N minutes` [name=NAME] [to=#channel|MESSAGE_LINK]")
_LINK = re.compile(r"^<?https://[^/]+/archives/(?P<ch>[A-Z0-9]+)/p(?P<s>\d{10})(?P<us>\d{6})(?:[?|][^>]*)?>?$")
_CHANNEL_REF = re.compile(r"^<#(?P<ch>[A-Z0-9]+)(?:\|[^>]*)?>$")
_WHEN_EXAMPLE = "e.g. `at 18:00`, `every hour` or `every 15 minutes`"


def _scheduler(ctx: CommandContext) -> Any:
    if ctx.scheduler is None:
        raise LookupError("Scheduled jobs need the long-running bot: use them in `vision-agent chat` or "
                          "`vision-agent serve`.")
    return ctx.scheduler


def spec_of(args: list[str], opts: dict[str, str]) -> JobSpec:
    """`summary at HH:MM` / `snapshot CAMERA WHEN` / `heartbeat WHEN` / `digest WHEN` [name=] [to=] as the one model."""
    what = args[0].lower() if args else ""
    if what not in ACTIONS:
        raise ValueError(SCHEDULE_USAGE)
    camera, when = (args[1] if len(args) > 1 else None, args[2:]) if what == "snapshot" else (None, args[1:])
    if what == "snapshot" and camera is None:
        raise ValueError("Say which camera, e.g. `/vision schedule snapshot dock every hour`.")
    if not when:
        raise ValueError(f"Say when the {what} runs, {_WHEN_EXAMPLE}.")
    return parse(JobSpec, {"action": what, "camera": camera, "when": " ".join(when), **opts})


async def add_job(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"name", "to"})
    if not args:
        return fail(SCHEDULE_USAGE)
    _, text = create_job(spec_of(args, opts), ctx)
    return CommandReply(text)


def create_job(spec: JobSpec, ctx: CommandContext) -> tuple[CronJob, str]:
    """Schedule what `spec` asks for, as `ctx.requester`: the one way every door adds a job (slash, the
    schedule_job tool and MCP, REST). It posts where its owner may (the place it was asked, or a channel an operator
    opened: `slack.open_channels`); a name someone else's job has is theirs; the caps hold. ValueError otherwise."""
    scheduler = _scheduler(ctx)
    camera = resolve_camera(spec.camera, ctx, allow_all=False) if spec.camera else None
    name = spec.name or "-".join(p for p in (spec.action, camera, spec.slug) if p)
    who = ctx.requester
    if spec.action == "heartbeat" and not (ctx.operator or is_operator(ctx.settings, who)):
        # the heartbeat reads every camera's news and the site's checklist, within the site's daily call cap: it is
        # the site's, not one member's
        raise ValueError("the heartbeat is the whole site's check (every camera's news, HEARTBEAT.md, the day's "
                         "heartbeat calls): only an operator schedules one; a digest or a summary is yours to schedule")
    before = scheduler.job(name)
    if before is not None and (why := change_refusal(ctx.settings, before.owner, who, f"job `{name}`")):
        raise ValueError(why)
    owner = Owner.of(who) if before is None or before.owner is None or before.owner.user == who.user_id \
        else before.owner
    if before is None and (why := cap_refusal(ctx.settings, "job", (j.owner.user if j.owner else None
                                                                     for j in scheduler.jobs()), owner.user)):
        raise ValueError(why)
    channel, thread_ts = target_of(spec.to, ctx)
    action = ACTIONS[spec.action]
    if before is not None and before.name != name:  # the same job in another case: replaced under its own name
        scheduler.remove_job(before.name)
    job = scheduler.add_job(name, action, at=spec.at, every_minutes=spec.every_minutes, camera=camera,
                            channel=channel, thread_ts=thread_ts, owner=owner)
    what = {"daily_summary": "Daily summary", "heartbeat": "Heartbeat",
            "digest": "Digest of what happened since the last one"}.get(action, f"Snapshot of *{camera}*")
    when = f"daily at {job.at}" if job.at else f"every {job.every_minutes:g} min"
    where = f" to {_place(job)}" if job.channel else ""
    text = f"{what} {when}{where} as job `{job.name}` (next {next_run(ctx, job)})."
    hb = ctx.settings.heartbeat
    if action == "heartbeat" and hb.enabled and hb.interval_minutes > 0:
        text += (f" The configured heartbeat (every {hb.interval_minutes:g} min) keeps running too; set "
                 "VISION_AGENT_HEARTBEAT_MINUTES=0 (heartbeat.interval_minutes) to make this the only one.")
    if owner.member and action in ("daily_summary", "heartbeat"):
        text += f" Its model work is counted on {owner.label()}'s share of the day's budget."
    return job, text + f" Remove it with `/vision unschedule {job.name}`."


def target_of(raw: str | None, ctx: CommandContext) -> tuple[str | None, str | None]:
    """Where a job posts: `to=` if the asker may post there, else (for a member) the place it was asked; the
    operator's default is the alert route (None, None). ValueError naming where they may post otherwise."""
    here_channel, here_thread = answer_place(ctx)
    if raw is None:
        return (here_channel, here_thread) if not ctx.operator and here_channel else (None, None)
    channel, thread_ts = parse_target(raw)
    if ctx.operator or is_operator(ctx.settings, ctx.requester):
        return channel, thread_ts
    opened = ctx.settings.slack.open_channels
    if channel == here_channel or channel in opened or channel.lstrip("#") in opened:
        return channel, thread_ts
    also = f", or one the operator opened ({', '.join(opened)})" if opened else ""
    raise ValueError(f"a job you schedule posts here (the channel or thread you asked in){also}: not {raw[:80]}. "
                     "Leave out to=, or ask an operator to schedule it there.")


def _place(job: CronJob) -> str:
    return f"<#{job.channel}>" + (" (thread)" if job.thread_ts else "") if job.channel and job.channel[:1] in "CGD" \
        else f"{job.channel}" + (" (thread)" if job.thread_ts else "")


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
    to = f" to {_place(job)}" if job.channel else ""
    by = f", set by {job.owner.label()}" if job.owner is not None and job.owner.member else ""
    return f"• `{job.name}` — {job.action}{of}{to}, {when}{by}; next {next_run(ctx, job)}{_paused(ctx, job)}"


def _paused(ctx: CommandContext, job: CronJob) -> str:
    """' — paused: pipeline dock finished … at 14:03 UTC; resumes when dock runs again' for a snapshot job whose
    camera's pipeline ended (bot/monitoring/outlived.py), or ' — paused: no pipeline runs on dock' when none ran."""
    if job.action != "snapshot" or not job.camera or ctx.services.pipelines is None:
        return ""
    monitor = ctx.services.monitor
    ended = monitor.outlived.ended(job.camera) if monitor is not None else None
    if ended is not None:
        why = ended.line(ctx.settings.heartbeat.timezone)
    elif not any(h.name == job.camera and h.status in LIVE for h in ctx.services.pipelines.snapshot()):
        why = f"no pipeline runs on {job.camera}"
    else:
        return ""
    return f" — paused: {why}; resumes when {job.camera} runs again"


async def remove_job(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) != 1:
        return fail("Usage: `/vision unschedule NAME` (see `/vision jobs` for the names)")
    return CommandReply(unschedule(tokens[0], ctx))


def unschedule(name: str, ctx: CommandContext) -> str:
    """Remove a job as `ctx.requester` may (its owner or an operator); LookupError naming the jobs otherwise."""
    scheduler = _scheduler(ctx)
    job = scheduler.job(name)
    if job is None:
        names = ", ".join(f"`{j.name}`" for j in scheduler.jobs()) or "none"
        raise LookupError(f"No job named `{name[:64]}`; the jobs are: {names}.")
    if why := change_refusal(ctx.settings, job.owner, ctx.requester, f"job `{name}`"):
        raise ValueError(why)
    scheduler.remove_job(job.name)
    return f"Removed job `{job.name}`."


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
