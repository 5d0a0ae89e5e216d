"""The REST API's watches: list, add (as `/vision watch`, through the same `create_watch`), cancel."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.api.errors import UserError, user_errors
from bot.api.models import AddWatch
from bot.api.routes import _body, _ctx, _may_change, ok
from bot.commands.watches import answers_go, cancel, create_watch
from bot.monitoring.watch import Watch
from bot.services import need


def watch_dict(w: Watch) -> dict[str, Any]:
    return {**w.record(), "description": w.condition.describe()}


async def list_watches(request: web.Request) -> web.Response:
    book = need(_ctx(request).services.watches, "watches")
    ended = [{**watch_dict(w), "ended": why, "ended_at": at} for w, why, at in book.ended()]
    return ok(watches=[watch_dict(w) for w in book.all()], ended=ended)


async def add_watch(request: web.Request) -> web.Response:
    body = await _body(request, AddWatch)
    ctx = _ctx(request)
    _may_change(ctx)
    need(ctx.services.watches, "watches")
    with user_errors():
        watch, note = create_watch(body, ctx)
    # where the answer will be seen: the webhook, Slack, a terminal; always the event log
    places = [*answers_go(watch, ctx), f"GET /api/events?camera={watch.camera}"]
    said = f"The answer goes to {', '.join(places)}."
    return ok(201, watch=watch_dict(watch), note=f"{said} {note.strip()}".strip(), answers_to=places)


async def remove_watch(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    _may_change(ctx)
    book = need(ctx.services.watches, "watches")
    if book.get(request.match_info["id"]) is None:
        raise UserError(f"no watch {request.match_info['id'][:40]!r}; GET /api/watches lists them", 404)
    with user_errors():
        gone = cancel(request.match_info["id"], ctx)
    return ok(removed=gone.id)


WATCH_ROUTES: list[tuple[str, str, Any]] = [
    ("GET", "/api/watches", list_watches),
    ("POST", "/api/watches", add_watch),
    ("DELETE", "/api/watches/{id}", remove_watch),
]
