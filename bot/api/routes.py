"""The REST API's handlers: cameras, pipelines, rules, routes, events. Each acts as the operator through the same
command core and checks as `/vision` (bot/commands), so an API client gets no path around them."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel

from bot.api.errors import UserError, rest_wording, user_errors
from bot.api.frames import alert_clip, alert_frame, pipeline_frame
from bot.api.hosting import HOST_KEY, ApiHost
from bot.api.models import AddRule, CameraQuery, EventsQuery, RuleQuery, SetRoute, StartPipeline
from bot.backends.base import LIVE, PipelineHandle
from bot.commands.context import CommandContext
from bot.commands.routing import set_route as route_alerts
from bot.commands.rules import create_rule, remove, resolve_camera
from bot.commands.search import search_events as run_search
from bot.media.cameras import cameras, hide_camera_urls, named_zones
from bot.media.redaction import redact
from bot.monitoring.events_log import ID_DIGITS
from bot.monitoring.rules import ANY
from bot.monitoring.since import parse_since
from bot.objects.refusal import Refused, parse
from bot.objects.search import EventSearchSpec
from bot.pipelines.limits import cannot_count
from bot.pipelines.manager import PipelineManager
from bot.pipelines.readiness import COLUMNS, Source, of_manager, rows, summary
from bot.pipelines.request import request_of
from bot.pipelines.start import control, start
from bot.pipelines.status import status_line
from bot.rights import CONTROLLED, LOCAL_CHANNEL, refusal
from bot.services import need

M = TypeVar("M", bound=BaseModel)


def _host(request: web.Request) -> ApiHost:
    return request.app[HOST_KEY]


def _ctx(request: web.Request) -> CommandContext:
    """A command context for the operator (LOCAL_CHANNEL): an API client acts as whoever runs the bot."""
    host = _host(request)
    return CommandContext(settings=host.settings, services=host.services, user_id=LOCAL_CHANNEL, channel_id=LOCAL_CHANNEL,
                          operator=True, scheduler=host.scheduler)


def _may_change(ctx: CommandContext) -> None:
    """The one allowlist check (`bot.rights.refusal`); the operator passes it, as the CLI does."""
    if why := refusal(ctx.settings, ctx.requester, CONTROLLED):
        raise UserError(why, 403)


async def _body(request: web.Request, model: type[M]) -> M:
    """The JSON body as the object's one model (bot/objects/), refused in the words every door uses."""
    try:
        data = await request.json(loads=json.loads)
    except (ValueError, RecursionError):  # not JSON, or nested past what is read
        raise UserError("the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise UserError("the body must be a JSON object")
    try:
        return parse(model, data)
    except Refused as exc:
        raise UserError(str(exc)) from None


def _query(request: web.Request, model: type[M]) -> M:
    try:
        return parse(model, dict(request.query))
    except Refused as exc:
        raise UserError(str(exc)) from None


def _query_of(request: web.Request, model: type[M], known: set[str]) -> M:
    """The query string as an object's own model (bot/objects/), its other parameters left out."""
    try:
        return parse(model, {k: v for k, v in request.query.items() if k in known})
    except Refused as exc:
        raise UserError(str(exc)) from None


def ok(status: int = 200, **data: Any) -> web.Response:
    return web.json_response({"status": "ok", **data}, status=status)


def _cameras(request: web.Request) -> dict[str, str]:
    host = _host(request)
    return cameras(host.services.workspace, host.settings)


def handle_dict(h: PipelineHandle, mgr: PipelineManager, cams: dict[str, str]) -> dict[str, Any]:
    """The handle, what it counted so far, its "cannot count reliably" line and the status line `/vision status`
    shows, as `/vision status` has them: a registered camera is named (`video_reference` `camera "dock"`, in the
    summary and an error too), as `/vision` and the model's tools name it; any other source is credential-redacted
    (as every handle keeps it). `GET /api/cameras` is where the operator sees a camera's (masked) URL."""
    latest, tally = mgr.latest(h.pipeline_id), mgr.tally(h.pipeline_id)
    named = h.with_(video_reference=hide_camera_urls(h.video_reference, cams),
                    error=hide_camera_urls(h.error, cams) if h.error else h.error)
    return {**asdict(named), "counted": asdict(tally) if tally is not None and tally.text() else None,
            "cannot_count": cannot_count(latest.values) if latest is not None else None,
            "summary": hide_camera_urls(status_line(h, latest=latest, tally=tally), cams)}


# cameras and health -------------------------------------------------------
async def get_health(request: web.Request) -> web.Response:
    mgr = _host(request).services.pipelines
    live = sum(1 for h in mgr.snapshot() if h.status in LIVE) if mgr is not None else 0
    return ok(pipelines=live, time=time.time())


async def get_cameras(request: web.Request) -> web.Response:
    host = _host(request)
    ws = host.services.workspace
    cams = [{"name": n, "source": redact(url)} for n, url in cameras(ws, host.settings).items()]
    return ok(cameras=cams, zones=sorted(named_zones(ws, host.settings)))


async def get_readiness(request: web.Request) -> web.Response:
    """`GET /api/cameras/readiness[?camera=NAME]`: the rows `/vision cameras` shows, as JSON, with the summary line
    (camera names, never URLs: an error a source gave is shown with its camera named)."""
    host = _host(request)
    cams = _cameras(request)
    only = request.query.get("camera") or None
    registered = cams
    mgr = host.services.pipelines
    found = await of_manager(mgr, registered, only) if mgr is not None else rows(
        registered, Source([], lambda pid: None), lambda h: None, only)
    if only is not None and not found:
        raise UserError(f"no camera or pipeline called {only[:80]!r}; GET /api/cameras/readiness lists them all")
    out = [{k: redact(hide_camera_urls(v, cams)) if isinstance(v, str) else v for k, v in r.as_dict().items()}
           for r in found]
    return ok(cameras=out, summary=redact(hide_camera_urls(summary(found), cams)), columns=list(COLUMNS))


# pipelines ------------------------------------------------------------------
async def list_pipelines(request: web.Request) -> web.Response:
    mgr = need(_host(request).services.pipelines, "pipelines")
    with user_errors():
        handles = await mgr.list()
    cams = _cameras(request)
    return ok(pipelines=[handle_dict(h, mgr, cams) for h in handles])


async def start_pipeline(request: web.Request) -> web.Response:
    """Checked, named and counted at once, answered `starting` (201); the detector loads and the source opens in the
    background, and `GET /api/pipelines/{id}` shows it become `running` or `error` with the reason."""
    body = await _body(request, StartPipeline)
    ctx = _ctx(request)
    _may_change(ctx)
    with user_errors():
        started = await start(request_of(body), ctx.manager(), ctx, ctx.requester, background=True)
    handle, what, cams = started.handle, started.describe(), _cameras(request)
    if handle.status == "error":
        raise UserError(hide_camera_urls(f"{handle.name} could not start on {handle.video_reference}: "
                                         f"{redact(handle.error or 'source failed')}", cams))
    follow = f"/api/pipelines/{handle.pipeline_id}"
    return web.json_response(
        {"status": "ok", "pipeline": handle_dict(handle, ctx.manager(), cams),
         "runs": rest_wording(what).replace("`", ""),
         "follow": f"GET {follow} until its status is running (or error, with the reason)"},
        status=201, headers={"Location": follow})


async def get_pipeline(request: web.Request) -> web.Response:
    mgr = need(_host(request).services.pipelines, "pipelines")
    with user_errors():
        handle = await mgr.status(request.match_info["id"])
    return ok(pipeline=handle_dict(handle, mgr, _cameras(request)))


async def control_pipeline(request: web.Request) -> web.Response:
    verb = request.match_info["verb"]
    ctx = _ctx(request)
    _may_change(ctx)
    with user_errors():
        done, _ = await control(ctx.manager(), verb, request.match_info["id"], ctx.requester, ctx.settings)
    cams = _cameras(request)
    if request.match_info["id"].strip().lower() == "all":
        return ok(pipelines=[handle_dict(h, ctx.manager(), cams) for h in done])
    return ok(pipeline=handle_dict(done[0], ctx.manager(), cams))


# rules ------------------------------------------------------------------
async def list_rules(request: web.Request) -> web.Response:
    q = _query(request, CameraQuery)
    ctx = _ctx(request)
    monitor = need(ctx.services.monitor, "rules (the monitor)")
    with user_errors():
        camera = resolve_camera(q.camera, ctx) if q.camera else None
    rules = monitor.rules(camera) if camera and camera != ANY else monitor.rules()
    return ok(rules=[{**r.as_dict(), "id": r.id} for r in rules],
              default_cooldown_seconds=monitor.cooldown_seconds)


async def add_rule(request: web.Request) -> web.Response:
    body = await _body(request, AddRule)
    ctx = _ctx(request)
    _may_change(ctx)
    need(ctx.services.monitor, "rules (the monitor)")
    with user_errors():
        rule, text = create_rule(body, ctx)  # the one rule creation, as /vision rule and the tool
    return ok(201, rule={**rule.as_dict(), "id": rule.id}, note=rest_wording(text))


async def remove_rule(request: web.Request) -> web.Response:
    q = _query(request, RuleQuery)
    ctx = _ctx(request)
    _may_change(ctx)
    monitor = need(ctx.services.monitor, "rules (the monitor)")
    with user_errors():
        camera = resolve_camera(q.camera, ctx)
    if not any((r.camera, r.id) == (camera, q.id) for r in monitor.rules()):
        raise UserError(f"no rule {q.id!r} on {camera}; GET /api/rules lists them", 404)
    with user_errors():
        remove(camera, q.id, ctx)
    return ok(removed=q.id, camera=camera)


# routes -----------------------------------------------------------------
async def list_routes(request: web.Request) -> web.Response:
    router = need(_host(request).services.router, "alert routing")
    return ok(routes=router.routes(), verify=router.route_checks(), default_channel=router.default_channel)


async def set_route(request: web.Request) -> web.Response:
    body = await _body(request, SetRoute)
    ctx = _ctx(request)
    _may_change(ctx)
    router = need(ctx.services.router, "alert routing")
    with user_errors():
        route_alerts(body, ctx)  # as /vision route
    return ok(routes=router.routes(), verify=router.route_checks())


async def remove_route(request: web.Request) -> web.Response:
    q = _query(request, CameraQuery)
    ctx = _ctx(request)
    _may_change(ctx)
    router = need(ctx.services.router, "alert routing")
    if not router.remove_route(q.camera):
        raise UserError(f"no route for {q.camera or 'all cameras'}", 404)
    return ok(routes=router.routes())


# events -----------------------------------------------------------------
async def list_events(request: web.Request) -> web.Response:
    q = _query(request, EventsQuery)
    host = _host(request)
    log = need(host.services.events, "the event log")
    with user_errors():
        since = parse_since(q.since, host.settings.heartbeat.timezone, time.time()) if q.since else None
    if q.after is not None:  # paging: the oldest after that id, in id order
        events, after, more = log.page(int(q.after), q.limit, q.camera, q.type, since)
    else:  # the newest `limit`; `next` starts paging after every event this read could see
        newest = log.last_id
        events, more = log.query(since=since, camera=q.camera, limit=q.limit, event_type=q.type), False
        after = max([newest, *(int(e["id"]) for e in events if str(e["id"]).isdigit())])
    return ok(events=events, since=since, next=str(after).zfill(ID_DIGITS), more=more)


async def search_events(request: web.Request) -> web.Response:
    """GET /api/events/search?q=WORDS[&since&until&camera&limit]: the search_events tool's moments, as data."""
    known = {"q", "query", "words", *EventSearchSpec.model_fields}  # a cache-buster or tracking parameter is no error
    spec = _query_of(request, EventSearchSpec, known)
    host = _host(request)
    log = need(host.services.events, "the event log")
    with user_errors():
        found = await asyncio.to_thread(run_search, spec, log, host.settings)
    return ok(**found.as_data())


async def event_picture(request: web.Request) -> web.Response:
    """An event's small picture (the crop of what it saw, or its frame), kept as long as the event is."""
    log = need(_host(request).services.events, "the event log")
    ident = request.match_info["id"]
    picture = log.pictures.get(ident) if log.pictures is not None and ident.isdigit() else None
    if picture is None:
        raise UserError("no picture for that event: it had no frame, or it is older than the pictures kept; "
                        "GET /api/events/search lists the events that have one", 404)
    return web.Response(body=picture, content_type="image/jpeg", headers={"Cache-Control": "private, max-age=86400"})


ROUTES: list[tuple[str, str, Any]] = [
    ("GET", "/api/health", get_health),
    ("GET", "/api/cameras", get_cameras),
    ("GET", "/api/cameras/readiness", get_readiness),
    ("GET", "/api/pipelines", list_pipelines),
    ("POST", "/api/pipelines", start_pipeline),
    ("GET", "/api/pipelines/{id}", get_pipeline),
    ("POST", "/api/pipelines/{id}/{verb:stop|pause|resume}", control_pipeline),
    ("GET", "/api/pipelines/{id}/frame", pipeline_frame),
    ("GET", "/api/alerts/{id}/frame", alert_frame),
    ("GET", "/api/clips/{id}", alert_clip),
    ("GET", "/api/rules", list_rules),
    ("POST", "/api/rules", add_rule),
    ("DELETE", "/api/rules", remove_rule),
    ("GET", "/api/routes", list_routes),
    ("PUT", "/api/routes", set_route),
    ("DELETE", "/api/routes", remove_route),
    ("GET", "/api/events", list_events),
    ("GET", "/api/events/search", search_events),
    ("GET", "/api/events/{id}/picture", event_picture),
]
