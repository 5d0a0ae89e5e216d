"""The REST API's media answers: a pipeline's latest frame, the frame an alert was sent with (a webhook's
frame_url, which must show the alert's moment, not whatever the camera sees when the receiver gets to it), and an
alert's clip (a webhook's clip_url)."""

from __future__ import annotations

from aiohttp import web

from bot.api.errors import UserError, user_errors
from bot.api.hosting import HOST_KEY
from bot.services import need


async def pipeline_frame(request: web.Request) -> web.Response:
    mgr = need(request.app[HOST_KEY].services.pipelines, "pipelines")
    with user_errors():
        handle = mgr.resolve(request.match_info["id"])
    result = mgr.latest(handle.pipeline_id)
    if result is None or not result.frame:
        raise UserError(f"no frame yet from {handle.name} ({handle.status}); try again in a few seconds", 404)
    return web.Response(body=result.frame, content_type="image/jpeg", headers={"Cache-Control": "no-store"})


async def alert_frame(request: web.Request) -> web.Response:
    """Kept for the newest alerts only (`bot/monitoring/alert_frames.py`); an alert's frame never changes."""
    frames = need(request.app[HOST_KEY].services.router, "alert routing").frames
    frame = frames.get(request.match_info["id"]) if frames is not None else None
    if frame is None:
        kept = f"the newest {frames.keep} alert frames kept" if frames is not None else "alert frames kept here"
        raise UserError(f"no frame for that alert: it had none, or it is older than {kept}; set "
                        "webhook.inline_frames: true to get each frame inside the webhook itself", 404)
    return web.Response(body=frame, content_type="image/jpeg", headers={"Cache-Control": "private, max-age=86400"})


async def alert_clip(request: web.Request) -> web.StreamResponse:
    """An alert's MP4 by clip id (the file stem; only plain names inside the clips folder: ClipRecorder.find)."""
    clips = need(request.app[HOST_KEY].services.pipelines, "pipelines").clips
    clip = clips.find(request.match_info["id"]) if clips is not None else None
    if clip is None:
        raise UserError("no such clip: it was never cut, or it is older than the newest clips.keep clips kept", 404)
    return web.FileResponse(clip.path, headers={"Content-Type": "video/mp4", "Cache-Control": "private, max-age=86400"})
