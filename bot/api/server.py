"""The REST API's gate and its server: bearer token on every /api path, errors as JSON, 127.0.0.1 by default.

`mount(app, host)` adds the API to any aiohttp app (the Slack adapter's /healthz server does this under `serve`);
`ApiServer` runs it alone (`vision-agent api`, tests). Without VISION_AGENT_API_TOKEN the API is off: every /api
path answers 401 saying how to turn it on (a token-less API on loopback would still be open to every local user
and to browser pages that reach 127.0.0.1).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import ValidationError

from bot.api.errors import UserError
from bot.api.hosting import HOST_KEY, ApiHost
from bot.api.inference import INFERENCE_ROUTES, body_limit
from bot.api.inference import PATH as INFERENCE_PATH
from bot.api.jobs import JOB_ROUTES
from bot.api.limits import GuardedSite, read_body
from bot.api.openapi import document
from bot.api.routes import ROUTES
from bot.api.watches import WATCH_ROUTES
from bot.media.reach import is_loopback
from bot.media.redaction import redact
from bot.services import ServiceUnavailable

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
OFF = "the REST API is off: set VISION_AGENT_API_TOKEN (a long random string) and restart"


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """The shape of every API error (README.md, docs/architecture.md): {"status": "error", "error": "..."}."""
    return web.json_response({"status": "error", "error": redact(message)}, status=status, headers=headers)


def token_ok(expected: str | None, header: str | None) -> bool:
    """The Authorization header carries exactly `Bearer <expected>` (compared in constant time)."""
    if not expected or not header:
        return False
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Auth first (nothing of the API runs for a stranger), then every failure as one JSON error line."""
    if request.path.startswith("/api/") or request.path == "/api":
        token = request.app[HOST_KEY].settings.api.token
        expected = token.get_secret_value() if token else None
        if expected is None:
            return error(401, OFF, {"WWW-Authenticate": "Bearer"})
        if not token_ok(expected, request.headers.get("Authorization")):
            return error(401, "missing or wrong token: send Authorization: Bearer <VISION_AGENT_API_TOKEN>",
                         {"WWW-Authenticate": "Bearer"})
    settings = request.app[HOST_KEY].settings
    if request.path == INFERENCE_PATH:  # an image in the body: up to the image size limit, not the JSON API's 1 MB
        request = request.clone(client_max_size=body_limit(settings.slack.max_image_bytes))
    try:
        await read_body(request, settings.servers)  # a slow body times out before any handler
        return await handler(request)
    except UserError as exc:
        return error(exc.status, str(exc))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return error(400, f"invalid {where}: {first['msg']}")
    except ServiceUnavailable as exc:
        return error(503, str(exc))
    except web.HTTPException as exc:  # aiohttp's own 404 / 405 / 413, in our shape
        if exc.status < 400:
            raise
        if exc.status == 413:
            return error(413, f"the body is over the {request.client_max_size // 1024} KB this path takes: send less "
                              "(an image over the limit: a smaller one)")
        return error(exc.status, exc.reason or "request refused", {"Allow": exc.headers["Allow"]}
                     if "Allow" in exc.headers else None)
    except Exception:
        log.exception("API %s %s failed", request.method, request.path)
        return error(500, "internal error; see the server log")


def mount(app: web.Application, host: ApiHost) -> None:
    """Add /api/..., /openapi.json and the `guard` middleware to `app` (before it starts)."""
    app[HOST_KEY] = host
    if guard not in app.middlewares:
        app.middlewares.append(guard)
    for method, path, handler in ROUTES + WATCH_ROUTES + JOB_ROUTES + INFERENCE_ROUTES:
        app.router.add_route(method, path, handler)
    app.router.add_get("/openapi.json", _openapi)


async def _openapi(request: web.Request) -> web.Response:
    return web.json_response(document())  # no secrets in it: readable without the token, like /healthz


def build_app(host: ApiHost, client_max_size: int = 1024 * 1024) -> web.Application:
    app = web.Application(client_max_size=client_max_size)
    mount(app, host)
    return app


class ApiServer:
    """The API alone on host:port (port 0: any free one; `start()` returns it)."""

    def __init__(self, host: ApiHost, bind: str = "127.0.0.1", port: int = 8081) -> None:
        if not is_loopback(bind) and host.settings.api.token is None:
            raise ValueError(f"refusing to serve the API on {bind} without VISION_AGENT_API_TOKEN")
        self.host, self.bind, self.port = host, bind, port
        self._site = GuardedSite()

    async def start(self) -> int:
        self.port = await self._site.open(build_app(self.host), self.bind, self.port, self.host.settings.servers)
        log.info("REST API on http://%s:%d/api (OpenAPI: /openapi.json)", self.bind, self.port)
        return self.port

    async def stop(self) -> None:
        await self._site.close()
