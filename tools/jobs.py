"""schedule_job: the agent schedules a recurring job (summary, snapshot, digest, heartbeat) through the one creation."""

from __future__ import annotations

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolContext, ToolResult
from bot.commands.context import CommandContext
from bot.commands.schedule import create_job
from bot.objects.job import JobSpec


async def schedule_job(args: JobSpec, ctx: ToolContext) -> ToolResult:
    who = ctx.requester
    cmd = CommandContext(ctx.settings, ctx.services, who.user_id, who.channel_id, ctx.session_key or None,
                         operator=who.operator, scheduler=ctx.services.jobs.scheduler)
    try:
        _, text = create_job(args, cmd)  # as /vision schedule and POST /api/jobs
    except (ValueError, LookupError) as exc:
        return ToolResult.error(str(exc))
    return ToolResult(text)


def register(reg: ToolRegistry) -> None:
    reg.register_operation("schedule_job", schedule_job)
