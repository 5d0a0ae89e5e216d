"""Starting and controlling a pipeline, the one way: the agent's tool, `/vision start`, REST, MCP and recipes all
validate the one model (bot/objects/pipeline.py), build a StartRequest (bot/pipelines/request.py) and call `start`;
stop, pause and resume go through `control`, which lets only the pipeline's owner or an operator act. So every
surface gets the same checks, in the same order, with the same messages."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from bot.backends.base import LIVE, PipelineHandle
from bot.config import Settings
from bot.media.cameras import camera_name_for, camera_row, named_zones
from bot.media.resolve import MediaScope, resolve_video
from bot.media.sources import file_fps, is_live
from bot.objects.owner import Owner, change_refusal, is_operator
from bot.pipelines.analytics import Analytics, compose
from bot.pipelines.manager import PipelineManager
from bot.pipelines.naming import default_name
from bot.pipelines.rate import Rate
from bot.pipelines.request import StartRequest, check
from bot.pipelines.turning import orientation, with_row
from bot.rights import Requester

__all__ = ["StartRequest", "Started", "control", "start"]


@dataclass(frozen=True)
class Started:
    """A start's outcome: the handle (status `error` if the source failed at once) and what it runs, in words."""

    handle: PipelineHandle
    request: StartRequest
    analytics: Analytics
    rate: Rate | None = None

    def describe(self) -> str:
        """"model `builtin/people`, counting crossings of the line (0,5)→(9,5) at up to 5 fps" (see Rate)."""
        req = self.request
        if req.workflow_id:
            what = f"workflow {req.workspace_name}/{req.workflow_id}"
        else:
            what = f"model `{req.model_id}`" if req.model_id else "an inline workflow"
        rate = self.rate or Rate(req.max_fps, req.source)
        turned = orientation(req).describe()
        return what + (f", {turned}" if turned else "") + self.analytics.describe() + rate.describe()


async def start(req: StartRequest, mgr: PipelineManager, caller: MediaScope, who: Requester,
                starting: Callable[[], Awaitable[None]] | None = None, background: bool = False) -> Started:
    """Check the request, resolve its source (as `caller` may: its folders, cameras, attachments), compose its
    line/zone workflow and start it on `mgr`, counted against `who`'s share (bot/pipelines/caps.py).

    Raises ValueError / MediaError / BackendError with one line a user or the model can act on; nothing is opened
    before the request's own checks pass. `starting` is awaited once they have (the line and zone checked on a frame
    too), before the slow part; the source may still fail to open after it. `background`: the slow part (loading
    the detector, opening the source) runs after this returns, the handle `starting` (`PipelineManager.begin`).
    """
    zones = named_zones(caller.workspace, caller.settings)
    check(req, zones)
    made = Owner.of(who)
    req = replace(req, owner=made.user, owner_channel=made.channel, owner_place=made.place)
    if why := mgr.cap_refusal(req.owner):  # before the source is probed; enforced again under the start lock
        raise ValueError(why)
    mgr.backends.check(req.backend)  # an unknown backend is refused before the source is probed
    # Off the event loop: an http(s) source is fetched once and every stream host is looked up (DNS) here.
    source = await asyncio.to_thread(resolve_video, req.source, caller)
    # A camera mounted turned: its row says so unless the start did (bot/pipelines/turning.py)
    row = await asyncio.to_thread(camera_row, caller.workspace, caller.settings, req.source)
    req = with_row(req, row or await asyncio.to_thread(camera_row, caller.workspace, caller.settings, source))
    # A line or zone is checked on a frame of the source (a line off its frames is refused) before anyone is told
    # the start goes ahead: "loading the detector" then "the line lies outside" contradicted itself.
    extra = await compose(req.model_id, source, req.line, req.zone, zones, req.anchor, req.confidence, req.min_height,
                          caller.settings.media.max_pixels, orientation(req))
    if starting is not None:  # checked and found: what is left (opening the source, loading the detector) takes seconds
        await starting()
    name = (req.name or "").strip()
    if not name:
        # The camera's own name, also when the model passed a URL: a pipeline's name is shown where URLs are not.
        camera = camera_name_for(caller.workspace, caller.settings, source)
        name = default_name(source, camera, mgr, req.owner)
    spec = extra.spec or req.workflow_spec
    ready = replace(req, source=source, name=name, workflow_spec=spec, line=None, zone=None, anchor=None,
                    confidence=None, min_height=None)
    handle = await (mgr.begin(ready) if background else mgr.start(ready))
    own = await asyncio.to_thread(file_fps, source) if req.max_fps and not is_live(source) else None
    rate = Rate(req.max_fps, source, own, req.backend or caller.settings.inference.backend)
    return Started(handle, replace(req, name=handle.name), extra, rate)


async def control(mgr: PipelineManager, verb: str, target: str, who: Requester,
                  settings: Settings) -> tuple[list[PipelineHandle], str]:
    """stop / pause / resume one pipeline (by name or id) or `all` of them, as `who` may: its owner or an operator.

    Returns the handles acted on and a note on the ones left alone (someone else's, for `all`); one pipeline that is
    not `who`'s raises ValueError with the refusal line.
    """
    if target.strip().lower() != "all":
        if why := change_refusal(settings, mgr.owner(target), who, f"pipeline {mgr.resolve(target).name!r}"):
            raise ValueError(why)
        return [await getattr(mgr, verb)(target)], ""
    if is_operator(settings, who):  # every pipeline
        return await mgr.control_all(verb), ""
    mine = [h for h in mgr.snapshot() if mgr.owner(h.pipeline_id).user == who.user_id]
    left = len([h for h in mgr.snapshot() if h.status in LIVE]) - len([h for h in mine if h.status in LIVE])
    done = [await getattr(mgr, verb)(h.pipeline_id) for h in mine if h.status in LIVE or (verb == "stop" and h.status == "error")]
    note = f" {left} pipeline{'s' * (left != 1)} of other people or the operator left as they are." if left > 0 else ""
    return done, note
