"""`vision-agent serve`: check tokens, build the runtime and the Bolt app, register handlers, open the socket."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import re
import sys
from collections.abc import Callable
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.media.redaction import install_log_redaction
from bot.monitoring.alerts import DEFAULT_CAMERA
from bot.process import Lifetime, say
from bot.runtime import Runtime
from handlers import register
from handlers.context import SlackBot
from handlers.hosting.servers import host_servers
from handlers.listeners import messages
from handlers.transport.delivery import retry_handlers
from handlers.transport.socket import AckingSocketModeHandler, ack_unparseable, on_listener_error, quiet_socket_logger

log = logging.getLogger(__name__)
# Web API calls in flight at once; more wait for a free connection (FIFO). Enough for a burst of threads against
# Slack's real round trip (~100 ms: a low cap would queue the calls), few enough that a burst reuses warm ones.
WEB_API_CONNECTIONS = 64
KEEPALIVE = 60.0  # seconds an idle Web API connection is kept for the next call (aiohttp's default is 15)
DRAIN = 1.0  # on SIGTERM, turns being answered get this long; the rest are finished after the restart (inflight)
_CHANNEL_ID = re.compile(r"^(?:<#)?(?P<id>[CG][A-Z0-9]{6,})(?:\|[^>]*)?>?$")  # C0123ABCD or <#C0123ABCD|name>


class TokenError(ValueError):
    """Missing or malformed Slack tokens; str() is one line saying what to do."""


def check_tokens(settings: Settings) -> tuple[str, str]:
    """(bot token, app token), or TokenError naming the variable to fix. Never echoes a secret."""
    slack = settings.slack
    bot = slack.bot_token.get_secret_value().strip() if slack.bot_token else ""
    app = slack.app_token.get_secret_value().strip() if slack.app_token else ""
    if not bot:
        raise TokenError("SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-…) from your Slack app's "
                         "OAuth & Permissions page (create the app from manifest.yml).")
    if not bot.startswith("xoxb-"):
        raise TokenError("SLACK_BOT_TOKEN must be the bot token starting with xoxb- (OAuth & Permissions page), "
                         "not a user or app token.")
    if not app:
        raise TokenError("SLACK_APP_TOKEN is not set: create an app-level token with connections:write "
                         "(Basic Information → App-Level Tokens); it starts with xapp-.")
    if not app.startswith("xapp-"):
        raise TokenError("SLACK_APP_TOKEN must be the app-level token starting with xapp- "
                         "(Basic Information → App-Level Tokens).")
    return bot, app


def narrow_heartbeat_wait(runtime: Runtime, team_id: str) -> list[str] | None:
    """Make the heartbeat wait only for chat turns in the channel its alerts go to (not every Slack session).

    Returns the new prefixes, or None when the broad default ('slack:') stays.
    """
    if runtime.scheduler is None:  # no heartbeat in this process
        return None
    heartbeat, router = runtime.scheduler.heartbeat, runtime.router
    # Where a heartbeat alert goes at start-up (a later `/vision route` for all cameras does not re-narrow this).
    channel = router.channel_for(DEFAULT_CAMERA)
    m = _CHANNEL_ID.match((channel or "").strip())
    if m is None:
        # A name such as '#alerts' becomes an id only through conversations.list, which needs the channels:read
        # scope this app does not ask for: keep waiting for every Slack session (safe, only less precise).
        log.info("heartbeat waits for chat turns in any Slack channel: alert channel %r is not a channel id", channel)
        return None
    heartbeat.chat_prefixes = ["cli:", f"slack:{team_id}:{m['id']}:"]
    return heartbeat.chat_prefixes


def build_app(client: AsyncWebClient, identity: dict[str, Any]) -> AsyncApp:
    """The Bolt app over `client` (whose base_url is SLACK_API_URL), authorized from our one auth.test."""
    token = client.token
    result = AuthorizeResult(enterprise_id=None, team_id=identity["team_id"], bot_token=token,
                             bot_id=identity.get("bot_id"), bot_user_id=identity["user_id"])

    async def authorize() -> AuthorizeResult:
        # No network call per event: dispatch never waits, so envelopes reach handlers in arrival order.
        return result

    client.token = None  # with `authorize`, Bolt warns about a client token it would ignore; put it back after
    # Unhandled requests become a debug line (on_listener_error) instead of Bolt's warning; they are still acked.
    app = AsyncApp(client=client, authorize=authorize, name="vision-agent", request_verification_enabled=False,
                   raise_error_for_unhandled_request=True)
    app.error(on_listener_error)
    client.token = token  # app.client also serves work off the request path (turns, alerts)
    return app


async def run(settings: Settings, runtime: Runtime | None = None, *, on_ready: Callable[[SlackBot], Any] | None = None,
              stop: asyncio.Event | None = None) -> int:
    """Serve until `stop` is set (or forever); `on_ready(bot)` once connected (tests, benchmarks).

    Raises TokenError / SlackApiError for bad credentials. A runtime passed in is left open.
    """
    bot_token, app_token = check_tokens(settings)
    async with contextlib.AsyncExitStack() as stack:
        # One pooled HTTP session for every Web API call (listeners' clients share it too): no TCP set-up per call.
        # Idle connections are kept KEEPALIVE s: a burst of threads (a 👀 and a first step each) reuses warm ones
        # instead of opening one per call (measured: new connections tripled the CPU of a 50-thread burst).
        connector = aiohttp.TCPConnector(limit=WEB_API_CONNECTIONS, keepalive_timeout=KEEPALIVE)
        session = await stack.enter_async_context(aiohttp.ClientSession(connector=connector))
        # Every Slack call rides out 429s (Retry-After), resets and 5xx; Bolt copies these into listener clients.
        client = AsyncWebClient(token=bot_token, base_url=settings.slack.api_url, session=session,
                                retry_handlers=retry_handlers())
        identity = _as_dict((await client.auth_test()).data)  # a bad or revoked bot token fails here, before anything starts
        # The SDK retries a rejected app token forever; ask once ourselves so a bad one is a clear error instead.
        await client.apps_connections_open(app_token=app_token)
        if runtime is None:
            runtime = await Runtime(settings).start()
            stack.push_async_callback(runtime.close)
        bot = register(build_app(client, identity), runtime)
        stack.push_async_callback(bot.close, DRAIN)
        bot.set_identity(identity)
        narrow_heartbeat_wait(runtime, identity["team_id"])
        # The socket client opens connections through `client` too, so SLACK_API_URL covers both.
        handler = AckingSocketModeHandler(bot.app, app_token, logger=quiet_socket_logger(), web_client=client,
                                          gate=bot.acks)
        handler.own_ids = {i for i in (identity.get("user_id"), identity.get("bot_id")) if i}
        handler.client.message_listeners.append(ack_unparseable)
        stack.push_async_callback(handler.close_async)
        bot.socket = handler.client
        await host_servers(stack, bot, runtime, settings)  # /healthz, REST API, MCP: whichever are configured
        # What start-up built (libraries, the runtime) stays for the process's life: frozen out of the cyclic
        # collector, a full collection scans only what came later. Measured in a 50-thread burst (py-spy): one
        # full collection of the start-up heap held the event loop 112 ms, acks and first steps waiting behind it.
        gc.collect()
        gc.freeze()
        stack.callback(gc.unfreeze)  # a serve() that returns (tests run it in-process) leaves the collector as it was
        await handler.connect_async()
        say(ready_line(identity, runtime, settings))
        await runtime.announce_stored()  # stored data set aside at start-up: one note where alerts go
        messages.resume_open_turns(bot)  # turns a crash interrupted: answered now, without a new message
        if on_ready is not None:
            on_ready(bot)
        await (stop or asyncio.Event()).wait()
    return 0


def ready_line(identity: dict[str, Any], runtime: Runtime, settings: Settings) -> str:
    """The one line `serve` prints once connected: the workspace and bot user (auth.test), what it holds, what it
    serves beside the socket."""
    team = identity.get("team") or identity.get("team_id") or "?"
    line = (f"connected to Slack workspace {team} ({identity.get('team_id')}) as @{identity.get('user') or '?'} "
            f"({identity.get('user_id')}); {runtime.holding()}")
    beside = [f"{what} on http://{host}:{port}{path}" for what, host, port, path in (
        ("/healthz", settings.slack.health_host, settings.slack.health_port, "/healthz"),
        ("REST API", settings.api.host, settings.api.port or settings.slack.health_port, "/api"),
        ("MCP", settings.mcp.host, settings.mcp.serve_port, "/mcp"),
    ) if port is not None and (what != "REST API" or settings.api.token is not None)]
    return line + (f"; {', '.join(beside)}" if beside else "") + ". Ctrl-C stops it."


def serve(settings: Settings) -> int:
    """Entry point of `vision-agent serve`: exit 0 on SIGINT/SIGTERM (within seconds, with a last line), 2 with one
    line on bad credentials."""
    lifetime = Lifetime("vision-agent")

    async def main() -> int:
        stop = asyncio.Event()
        lifetime.install(stop.set)

        def ready(bot: SlackBot) -> None:
            lifetime.holds = bot.runtime.leaving  # the last line says what stays saved

        code = await run(settings, on_ready=ready, stop=stop)
        return lifetime.finish(code)  # in the loop: nothing after it waits for the interpreter's teardown

    install_log_redaction()  # idempotent; also when the adapter is started without the `vision-agent` CLI
    try:
        check_tokens(settings)
        return asyncio.run(main())
    except TokenError as exc:
        print(f"vision-agent serve: {exc}", file=sys.stderr)
    except (aiohttp.ClientError, OSError) as exc:
        print(f"vision-agent serve: cannot reach Slack at {settings.slack.api_url} ({type(exc).__name__}); "
              "check the network or SLACK_API_URL.", file=sys.stderr)
        return 1
    except SlackApiError as exc:
        error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
        if error is None:  # not Slack's JSON: a wrong SLACK_API_URL or a proxy page
            print(f"vision-agent serve: {settings.slack.api_url} did not answer like Slack's Web API "
                  f"(HTTP {exc.response.status_code}); check SLACK_API_URL or unset it.", file=sys.stderr)
            return 1
        print(f"vision-agent serve: Slack rejected the tokens ({error}); check SLACK_BOT_TOKEN and "
              "SLACK_APP_TOKEN belong to the installed app.", file=sys.stderr)
    return 2


def _as_dict(data: dict[str, Any] | bytes) -> dict[str, Any]:
    """A Web API response body as a dict (slack_sdk types `.data` as dict or bytes; JSON methods give a dict)."""
    if not isinstance(data, dict):
        raise RuntimeError("Slack answered auth.test with a non-JSON body; check SLACK_API_URL")
    return data
