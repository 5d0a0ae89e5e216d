"""The REST API's single images: POST /api/inference is the model's run_inference tool over HTTP.

The body is the tool's arguments (`image` as base64, an http(s) URL or a file in the media folders), or the image
itself (`Content-Type: image/jpeg`, `image/png`, ...) with the other arguments in the query string. The registry
runs it, so a still gets the same checks, detector and answer here as from chat, the CLI and MCP; the door only
turns the result into JSON: the summary the model reads and the boxes (`ToolResult.data`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from aiohttp import web

from bot.agent.tools import ToolContext
from bot.api.errors import UserError
from bot.api.hosting import HOST_KEY
from bot.api.routes import ok
from bot.rights import OPERATOR

PATH = "/api/inference"
TOOL = "run_inference"
SESSION_KEY = "api"  # tools that keep per-session state see one REST session (the operator's)
_JSON_OVERHEAD = 64 * 1024  # the other arguments beside a base64 image


def body_limit(max_image_bytes: int) -> int:
    """The largest body this path reads: an image at the image size limit, base64-encoded (4/3), plus arguments."""
    return max_image_bytes * 4 // 3 + _JSON_OVERHEAD


async def _arguments(request: web.Request) -> dict[str, Any]:
    """The tool's arguments from a JSON body, or from the query string around an image body."""
    if request.content_type == "application/json":
        try:
            data = await request.json(loads=json.loads)
        except (ValueError, RecursionError):
            raise UserError("the body must be a JSON object (the run_inference arguments) or an image") from None
        if not isinstance(data, dict):
            raise UserError("the body must be a JSON object (the run_inference arguments) or an image")
        return data
    raw = await request.read()
    if not raw:
        raise UserError("no image: send it as the body (Content-Type: image/jpeg) or as `image` in a JSON body")
    if "image" in request.query:
        raise UserError("the image is the body here: drop `image` from the query string")
    # A data: URL is always read as the bytes it holds (short raw base64 could be taken for a file name).
    return {**request.query, "image": f"data:{request.content_type};base64,{base64.b64encode(raw).decode()}"}


async def run_inference(request: web.Request) -> web.Response:
    host = request.app[HOST_KEY]
    arguments = await _arguments(request)
    arguments.setdefault("include_frame", False)  # a JSON reply carries the JPEG (base64) only when asked
    ctx = ToolContext(settings=host.settings, session_key=SESSION_KEY, services=host.services, requester=OPERATOR)
    result = await host.tools.execute(TOOL, arguments, ctx)
    if result.is_error:
        raise UserError(result.text)
    body: dict[str, Any] = {"summary": result.text, **(result.data or {})}
    if result.frame:
        body["frame"] = base64.b64encode(result.frame).decode()
    return ok(**body)


INFERENCE_ROUTES: list[tuple[str, str, Any]] = [("POST", PATH, run_inference)]
