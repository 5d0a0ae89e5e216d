"""`/vision route` and the alert part of `/vision status`: where alerts go, and what is muted."""

from __future__ import annotations

import time
from collections.abc import Iterable

from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.commands.rules import resolve_camera
from bot.media.cameras import cameras
from bot.objects.caps import cap_refusal
from bot.objects.owner import Owner, change_refusal, is_operator
from bot.objects.refusal import parse
from bot.objects.route import RouteSpec


async def route(tokens: list[str], ctx: CommandContext) -> CommandReply:
    args, opts = parse_options(tokens, {"camera", "verify"})
    if len(args) != 1:
        return fail("Usage: `/vision route CHANNEL [camera=NAME] [verify=on|hold|off]`")
    spec = parse(RouteSpec, {"channel": args[0], **opts})
    set_route(spec, ctx)
    camera = None if spec.camera in (None, "*") else spec.camera
    return CommandReply(f"Alerts {'from *' + camera + '*' if camera else 'from all cameras'} now go to {args[0]}"
                        f"{VERIFY_SAID.get(spec.verify or '', '')}.")


VERIFY_SAID = {"on": "; the model checks each one after it is posted and the alert says what it saw",
               "hold": "; each is posted only once the model saw what it says (held otherwise)",
               "off": "; the model does not check them"}


def set_route(spec: RouteSpec, ctx: CommandContext) -> None:
    """Route a camera's alerts as `ctx.requester` may: the one way `/vision route` and PUT /api/routes set one. A
    member routes only to the channel they asked in or one the operator opened (`slack.open_channels`); a route
    someone else set is theirs to change; the caps hold. ValueError / LookupError otherwise."""
    router = ctx.services.router
    if router is None:
        raise LookupError("Alert routing is not available in this process.")
    camera = None if spec.camera in (None, "*") else resolve_camera(spec.camera, ctx, allow_new=True)
    camera = None if camera == "*" else camera
    who = ctx.requester
    operator = ctx.operator or is_operator(ctx.settings, who)
    before = router.routes().get(camera or "*")
    if before is not None and (why := change_refusal(ctx.settings, router.route_owner(camera), who,
                                                     f"the alert route of {camera or 'every camera'}")):
        raise ValueError(why)
    if not operator and (why := _not_theirs(camera, ctx)):
        raise ValueError(why)
    opened = ctx.settings.slack.open_channels
    if not operator and spec.channel != ctx.channel_id and spec.channel.lstrip("#") not in opened \
            and spec.channel not in opened:
        also = f" or one the operator opened ({', '.join(opened)})" if opened else ""
        raise ValueError(f"you can route alerts to this channel{also}, not {spec.channel}: alerts must go where "
                         "the person who routes them reads; ask an operator for another channel.")
    owner = Owner.of(who)
    if before is None and (why := cap_refusal(ctx.settings, "route", router.route_owners(), owner.user)):
        raise ValueError(why)
    router.set_route(spec.channel, camera, owner if owner.member else None, spec.verify)


def _not_theirs(camera: str | None, ctx: CommandContext) -> str | None:
    """Why a member may not route this camera's alerts: where alerts go is the site's, except for a pipeline the
    member runs (their own camera's alerts may come to them)."""
    if camera is None:
        return ("where every camera's alerts go is the operator's to set; route one of your own pipelines instead "
                "(`/vision route CHANNEL camera=NAME`)")
    mgr = ctx.services.pipelines
    try:
        owner = mgr.owner(camera) if mgr is not None else None
    except LookupError:
        owner = None
    if owner is None or owner.user != ctx.requester.user_id:
        return (f"{camera}'s alerts go where its owner or the operator sends them; you can route the alerts of a "
                f"pipeline you started (`/vision start` one, then `/vision route CHANNEL camera=NAME`)")
    return None


def _clock(ts: float) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(ts))


def routes_status(ctx: CommandContext, pipeline_names: Iterable[str]) -> list[str]:
    """The status lines about alert routes and mutes (none when this process routes no alerts)."""
    if ctx.services.router is None:
        return []
    routes = ctx.services.router.routes()
    default = ctx.services.router.default_channel
    checked = {cam: f" (verify {ctx.services.router.verify_of(cam)})" for cam in routes
               if ctx.services.router.verify_of(cam) and cam in routes}
    lines = ["*Alert routes*: " + (", ".join(f"{cam} → {ch}{checked.get(cam, '')}" for cam, ch in sorted(routes.items()))
                                   or f"none (default channel: {default or 'not set'})")]
    names = set(cameras(ctx.workspace, ctx.settings)) | set(pipeline_names) | set(routes) | {"*"}
    muted = [(n, ctx.services.router.muted_until(n)) for n in sorted(names)]
    lines.append("*Muted*: " + (", ".join(f"{n} until {_clock(u)}" for n, u in muted if u) or "nothing"))
    return lines
