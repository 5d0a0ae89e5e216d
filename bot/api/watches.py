"""The REST API's watches: list, add (as `/vision watch`, through the same `make_watch`), cancel."""

from __future__ import annotations

import shlex
from typing import Any

from aiohttp import web

from bot.api.errors import UserError, user_errors
from bot.api.models import AddWatch
from bot.api.routes import _body, _ctx, _may_change, ok
from bot.commands.watches import make_watch
from bot.monitoring.watch import Watch
from bot.services import need


def watch_dict(w: Watch) -> dict[str, Any]:
    return {**w.record(), "description": w.condition.describe()}


async def list_watches(request: web.Request) -> web.Response:
    book = need(_ctx(request).services.watches, "watches")
    return ok(watches=[watch_dict(w) for w in book.all()])


async def add_watch(request: web.Request) -> web.Response:
    body = await _body(request, AddWatch)
    ctx = _ctx(request)
    _may_change(ctx)
    need(ctx.services.watches, "watches")
    with user_errors():
        seconds = None if body.for_seconds is None else body.for_seconds
        watch, note = make_watch(body.camera, shlex.split(body.condition), ctx, seconds, body.confirm, body.about)
    return ok(201, watch=watch_dict(watch), note=note.strip())


async def remove_watch(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    _may_change(ctx)
    book = need(ctx.services.watches, "watches")
    gone = book.remove(request.match_info["id"])
    if gone is None:
        raise UserError(f"no watch {request.match_info['id'][:40]!r}; GET /api/watches lists them", 404)
    return ok(removed=gone.id)


WATCH_ROUTES: list[tuple[str, str, Any]] = [
    ("GET", "/api/watches", list_watches),
    ("POST", "/api/watches", add_watch),
    ("DELETE", "/api/watches/{id}", remove_watch),
]
