"""A wire-level Slack emulator: Web API methods, file hosting and socket mode on 127.0.0.1, in its own thread."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.slack_directory import DirectoryMethods
from tests.fakes.slack_events import HUMAN, EventInjection
from tests.fakes.slack_faults import FaultInjection
from tests.fakes.slack_methods import SlackError, WebApiMethods
from tests.fakes.slack_socket import SocketModeMixin, blocks_error
from tests.fakes.slack_streams import StreamMethods
from tests.fakes.waits import patience
from tests.fixtures.common import free_port

BOT_TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-test-token"
TEAM_ID = "T0TEAM"
BOT_USER_ID = "U0BOT"
BOT_ID = "B0BOT"
APP_ID = "A0APP"

# Methods called with the app-level token; every other method needs the bot token.
APP_TOKEN_METHODS = {"apps.connections.open"}
JSON_FIELDS = ("blocks", "files", "attachments", "prompts", "metadata", "chunks")


@dataclass(frozen=True)
class ApiCall:
    """One request that reached the emulator."""

    method: str  # Web API method, or "files.download" / "files.upload" / "response_url"
    params: dict[str, Any]
    time: float
    token: str | None = None
    ok: bool = True
    error: str | None = None
    body: bytes | None = None
    arrived: float | None = None  # when the emulator began handling it (time: when it was done); Web API calls


@dataclass
class Channel:
    id: str
    name: str
    is_im: bool = False
    is_private: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)
    bot_member: bool = True  # False: a channel the app was never invited to (posts there answer not_in_channel)
    user: str = ""  # an IM's other member (conversations.open)


class SlackEmulator(WebApiMethods, DirectoryMethods, StreamMethods, EventInjection, SocketModeMixin, FaultInjection):
    """Slack's Web API + socket mode, recording every call. Start with `start()`, stop with `stop()`.

    `rate_limit(...)` (tests/fakes/slack_faults.py) makes Web API calls answer HTTP 429 + Retry-After."""

    def __init__(self, *, ack_timeout: float = 3.0, max_retries: int = 3) -> None:
        self.bot_token, self.app_token, self.team_id = BOT_TOKEN, APP_TOKEN, TEAM_ID
        self.bot_user_id, self.bot_id, self.app_id = BOT_USER_ID, BOT_ID, APP_ID
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.api_url = f"{self.base_url}/api/"
        self.calls: list[ApiCall] = []
        self.channels: dict[str, Channel] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.file_bytes: dict[str, bytes] = {}
        self.suggested_prompts = {}
        self.titles = {}
        self.completed: set[str] = set()  # files whose upload finished (files.completeUploadExternal)
        self.users, self.invisible = {}, set()
        self._cond = threading.Condition()
        self._last_ts = 0.0
        self._ids = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        for cid, name in (("C0GENERAL", "general"), ("C0ALERTS", "alerts"), ("C0OTHER", "random")):
            self.add_channel(cid, name)
        self.add_channel("D0HUMAN", "", is_im=True).user = HUMAN
        self.add_channel("G0PRIVATE", "secret", is_private=True)
        self.add_user(HUMAN, "human", "Human Person")
        self.add_user(BOT_USER_ID, "Vision Agent", is_bot=True)
        self._init_socket(ack_timeout, max_retries)
        self._init_faults()

    # lifecycle -----------------------------------------------------------
    def start(self) -> SlackEmulator:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="slack-emulator", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("Slack emulator did not start")
        return self

    def _run(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._shutdown())
        self._loop.close()

    async def _serve(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/files-pri/{team_file}/{name}", self._download)
        app.router.add_post("/response/{rid}", self._response_url)
        app.router.add_get("/link/", self._websocket)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)  # a line per call drowns test and bench output
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self._start_socket_tasks()

    async def _shutdown(self) -> None:
        await self._close_sockets()
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> SlackEmulator:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _call_in_loop(self, coro: Any) -> Any:
        assert self._loop is not None, "emulator not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    # recording -----------------------------------------------------------
    def _record(self, call: ApiCall) -> None:
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()

    def calls_to(self, method: str, where: Callable[[ApiCall], bool] | None = None) -> list[ApiCall]:
        """Successful calls of one method (optionally filtered), in arrival order."""
        with self._cond:
            return [c for c in self.calls if c.method == method and c.ok and (where is None or where(c))]

    def wait_for(
        self, method: str, where: Callable[[ApiCall], bool] | None = None, *, count: int = 1, timeout: float = 5.0
    ) -> list[ApiCall]:
        """Block until `count` successful calls of `method` matching `where` arrived; return them."""
        deadline = time.monotonic() + patience(timeout)
        with self._cond:
            while True:
                found = [c for c in self.calls if c.method == method and c.ok and (where is None or where(c))]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = sorted({c.method for c in self.calls})
                    raise TimeoutError(f"{len(found)}/{count} {method} calls after {timeout}s; saw {seen}")
                self._cond.wait(left)

    async def await_for(self, method: str, where: Callable[[ApiCall], bool] | None = None, **kw: Any) -> list[ApiCall]:
        """`wait_for` for async tests (does not block the caller's event loop)."""
        return await asyncio.to_thread(self.wait_for, method, where, **kw)

    # state helpers -------------------------------------------------------
    def next_ts(self) -> str:
        with self._cond:
            self._last_ts = max(time.time(), self._last_ts + 0.000001)
            return f"{self._last_ts:.6f}"

    def next_id(self, prefix: str) -> str:
        with self._cond:
            self._ids += 1
            return f"{prefix}{self._ids:08d}"

    def add_channel(self, cid: str, name: str, *, is_im: bool = False, is_private: bool = False,
                    bot_member: bool = True) -> Channel:
        self.channels[cid] = Channel(cid, name, is_im=is_im, is_private=is_private, bot_member=bot_member)
        return self.channels[cid]

    def postable(self, channel: str) -> Channel:
        """The channel a bot message goes to; one the app is not in answers not_in_channel (docs.slack.dev
        chat.postMessage: "Cannot post user messages to a channel they are not in")."""
        ch = self.channel(channel)
        if not ch.bot_member and not ch.is_im:
            raise SlackError("not_in_channel")
        return ch

    def channel(self, ref: str) -> Channel:
        name = ref.lstrip("#")
        for ch in self.channels.values():
            if ref == ch.id or (ch.name and name == ch.name):
                return ch
        raise SlackError("channel_not_found")

    def messages(self, channel: str, thread_ts: str | None = None) -> list[dict[str, Any]]:
        """Messages stored in a channel (all, or one thread including its root)."""
        msgs = self.channel(channel).messages
        if thread_ts is None:
            return list(msgs)
        return [m for m in msgs if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts]

    def find_message(self, channel: str, ts: str) -> dict[str, Any]:
        for m in self.channel(channel).messages:
            if m["ts"] == ts:
                return m
        raise SlackError("message_not_found")

    def store_message(self, channel: str, msg: dict[str, Any]) -> dict[str, Any]:
        ch = self.channel(channel)
        msg.setdefault("ts", self.next_ts())
        msg.setdefault("type", "message")
        ch.messages.append(msg)
        thread_ts = msg.get("thread_ts")
        if thread_ts and thread_ts != msg["ts"]:
            try:
                root = self.find_message(ch.id, thread_ts)
                root.setdefault("thread_ts", thread_ts)
                root["reply_count"] = root.get("reply_count", 0) + 1
            except SlackError:
                pass
        return msg

    def add_file(self, name: str, data: bytes, mimetype: str = "image/jpeg") -> dict[str, Any]:
        """Host a file as Slack does; returns the file object that goes in a message event's `files`."""
        fid = self.next_id("F")
        url = f"{self.base_url}/files-pri/{self.team_id}-{fid}/{name}"
        info = {
            "id": fid, "name": name, "title": name, "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1].lower() if "." in name else "binary",
            "size": len(data), "url_private": url, "url_private_download": url + "?download=1",
            "user": HUMAN, "created": int(time.time()), "mode": "hosted",
        }
        self.files[fid] = info
        self.file_bytes[fid] = data
        self.completed.add(fid)
        return dict(info)

    # HTTP: Web API -------------------------------------------------------
    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        for key in JSON_FIELDS:
            if isinstance(params.get(key), str):
                try:
                    params[key] = json.loads(params[key])
                except ValueError:
                    pass
        return params

    async def _api(self, request: web.Request) -> web.Response:
        arrived = time.time()
        method = request.match_info["method"]
        params = await self._params(request)
        auth = request.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else params.pop("token", None)
        params.pop("token", None)
        retry_after = self.take_rate_limit(method)
        if retry_after is not None:  # Slack's 429: before any other check, nothing happens
            self._record(ApiCall(method, params, time.time(), token, ok=False, error="ratelimited", arrived=arrived))
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(retry_after)})
        try:
            self._check_token(method, token)
            handler = getattr(self, "api_" + method.replace(".", "_"), None)
            if handler is None:
                raise SlackError("unknown_method")
            result = handler(params)
            if asyncio.iscoroutine(result):
                result = await result
        except SlackError as exc:
            self._record(ApiCall(method, params, time.time(), token, ok=False, error=exc.error, arrived=arrived))
            return web.json_response({"ok": False, "error": exc.error})
        self._record(ApiCall(method, params, time.time(), token, arrived=arrived))
        return web.json_response({"ok": True, **result})

    def _check_token(self, method: str, token: str | None) -> None:
        if not token:
            raise SlackError("not_authed")
        expected = self.app_token if method in APP_TOKEN_METHODS else self.bot_token
        if token != expected:
            raise SlackError("not_allowed_token_type" if token in (self.bot_token, self.app_token) else "invalid_auth")

    # HTTP: files and response_url ---------------------------------------------
    async def _upload(self, request: web.Request) -> web.Response:
        fid = request.match_info["file_id"]
        data = await request.read()
        if fid not in self.files:
            return web.Response(status=404, text="unknown upload")
        self.file_bytes[fid] = data
        self.files[fid]["size"] = len(data)
        self._record(ApiCall("files.upload", {"file_id": fid, "length": len(data)}, time.time(), body=data))
        return web.Response(text=f"OK - {len(data)}")

    async def _download(self, request: web.Request) -> web.Response:
        fid = request.match_info["team_file"].split("-", 1)[-1]
        auth = request.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        ok = token == self.bot_token and fid in self.file_bytes
        self._record(ApiCall("files.download", {"file_id": fid}, time.time(), token, ok=ok,
                             error=None if ok else "login_page"))
        if not ok:  # Slack answers an unauthenticated file request with its sign-in page, not an error status
            return web.Response(text="<!DOCTYPE html><html><body>Sign in to Slack</body></html>", content_type="text/html")
        return web.Response(body=self.file_bytes[fid], content_type=self.files[fid]["mimetype"])

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        retry_after = self.take_rate_limit("response_url")  # only when named: rate_limit("response_url")
        if retry_after is not None:
            self._record(ApiCall("response_url", body, time.time(), ok=False, error="ratelimited"))
            return web.Response(status=429, text="rate limited", headers={"Retry-After": str(retry_after)})
        error = blocks_error(body)
        self._record(ApiCall("response_url", {"rid": request.match_info["rid"], **body}, time.time(), ok=error is None,
                             error=error))
        if error:  # Slack answers a response_url post it cannot show with a 400 naming the problem
            return web.Response(status=400, text=error)
        return web.Response(text="ok")

