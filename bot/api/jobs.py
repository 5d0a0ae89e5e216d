"""The REST API's scheduled jobs: list, add (as `/vision schedule`, through the same `create_job`), remove."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.api.errors import UserError, rest_wording, user_errors
from bot.api.models import AddJob
from bot.api.routes import _body, _ctx, _may_change, ok
from bot.commands.schedule import create_job, next_run, unschedule
from bot.scheduling.cron_jobs import CronJob


def _scheduler(ctx: Any) -> Any:
    if ctx.scheduler is None:
        raise UserError("scheduled jobs run in the long-running process (`vision-agent api` or `serve`)", 503)
    return ctx.scheduler


def job_dict(job: CronJob, ctx: Any) -> dict[str, Any]:
    return {**job.record(), "next_run": next_run(ctx, job)}


async def list_jobs(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    return ok(jobs=[job_dict(j, ctx) for j in sorted(_scheduler(ctx).jobs(), key=lambda j: j.name)])


async def add_job(request: web.Request) -> web.Response:
    body = await _body(request, AddJob)
    ctx = _ctx(request)
    _may_change(ctx)
    _scheduler(ctx)
    with user_errors():
        job, text = create_job(body, ctx)
    return ok(201, job=job_dict(job, ctx), note=rest_wording(text))


async def remove_job(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    _may_change(ctx)
    name = request.match_info["name"]
    if _scheduler(ctx).job(name) is None:
        raise UserError(f"no job {name[:64]!r}; GET /api/jobs lists them", 404)
    with user_errors():
        unschedule(name, ctx)
    return ok(removed=name)


JOB_ROUTES: list[tuple[str, str, Any]] = [
    ("GET", "/api/jobs", list_jobs),
    ("POST", "/api/jobs", add_job),
    ("DELETE", "/api/jobs/{name}", remove_job),
]
