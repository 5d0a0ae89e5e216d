"""A Messages API emulator: aiohttp on 127.0.0.1, JSON and SSE replies, prompt-cache usage, real error shapes.

Driven per test by a queue of scripted replies (or a callable request -> Reply); records every request.
It validates requests the way the real API does where our code could get it wrong (role alternation,
tool_use/tool_result pairing, empty text blocks, unknown block fields, thinking budget, a prompt longer than the
context window), answering 400 like the API would, so a test talking to it through the real SDK fails for the
same reasons production would. Network faults: a reply may be delayed, never come (`hang()`), or stop mid-stream
(`stall_after`); a hung reply is released when the emulator stops, so teardown never waits for it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_checks import cache_usage, estimate_tokens, prompt_too_long, validate_request
from tests.fakes.anthropic_sse import sse_events

API_KEY = "sk-ant-test"


@dataclass
class Reply:
    """One scripted answer: content blocks, or an error (status >= 400)."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    status: int = 200
    error_type: str = ""
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (to test concurrency)
    # Network faults: the reply never comes (-1), or an SSE reply stops after this many events and the
    # connection stays open, silent (a stalled stream); cut short when the emulator stops.
    stall_after: int | None = None
    pace: float = 0.0  # seconds between two SSE events: a model writing its answer slowly, token by token
    # Held until the test sets it (or the emulator stops): "the model has not said a word yet", for as long as a
    # test needs to look at what the app shows meanwhile, without a timing assumption.
    gate: threading.Event | None = None


def text(t: str, stop_reason: str = "end_turn", delay: float = 0.0, pace: float = 0.0) -> Reply:
    """A plain text answer (`pace`: seconds between streamed events)."""
    return Reply([{"type": "text", "text": t}], stop_reason, delay=delay, pace=pace)


def held(reply: Reply, gate: threading.Event) -> Reply:
    """`reply`, sent only once `gate` is set: the model is "thinking" until the test lets it answer."""
    reply.gate = gate
    return reply


def tool_use(*calls: tuple[str, dict[str, Any]], text: str = "", thinking: str = "", delay: float = 0.0) -> Reply:
    """An answer calling one or more tools: tool_use(("think", {"thought": "..."}), text="Let me check")."""
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append(thinking_block(thinking))
    if text:
        blocks.append({"type": "text", "text": text})
    blocks += [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": n, "input": i} for n, i in calls]
    return Reply(blocks, "tool_use", delay=delay)


def thinking_block(thought: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thought, "signature": "sig_" + uuid.uuid4().hex}


def with_thinking(thought: str, reply: Reply) -> Reply:
    """The same reply preceded by an extended-thinking block (with a signature)."""
    return Reply([thinking_block(thought), *reply.content], reply.stop_reason, delay=reply.delay)


def error(status: int, retry_after: str | None = None, message: str = "") -> Reply:
    """An API error in the real shape: 429 rate_limit_error, 529 overloaded_error, 500 api_error, ..."""
    kinds = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
             404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
             500: "api_error", 529: "overloaded_error"}
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Reply(status=status, error_type=kinds.get(status, "api_error"),
                 error_message=message or {529: "Overloaded", 429: "Rate limited"}.get(status, "Internal server error"),
                 headers=headers)


def hang() -> Reply:
    """No answer at all: the request is read, then nothing comes back (a hung upstream or a dead proxy)."""
    return Reply(stall_after=-1)


def stalled(reply: Reply, events: int = 3) -> Reply:
    """The same reply, streamed (SSE) only up to `events` events; then the connection goes silent."""
    return Reply(reply.content, reply.stop_reason, delay=reply.delay, stall_after=events)


@dataclass
class Recorded:
    """One request as the emulator saw it."""

    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    status: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    received: float = field(default_factory=time.monotonic)
    answered: float = 0.0  # when the reply was fully written (overlap of [received, answered] = concurrency)


class FakeAnthropic:
    """The emulator. `with FakeAnthropic() as api:` or start()/stop(); `api.url` is the ANTHROPIC_BASE_URL."""

    def __init__(self, api_key: str = API_KEY, min_cache_tokens: int = 0, max_prompt_tokens: int = 199_999) -> None:
        self.api_key = api_key
        self.min_cache_tokens = min_cache_tokens
        self.max_prompt_tokens = max_prompt_tokens  # the real API's limit for 200k-window models
        self.replies: deque[Reply] = deque()
        self.handler: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[Recorded] = []
        self.cache: set[str] = set()
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._lock = threading.Lock()
        self._released: asyncio.Event | None = None  # set on stop(): hung and delayed replies end at once

    # -- scripting -------------------------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def ok_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.status == 200]

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.handler is not None:
            return self.handler(body)
        return Reply(status=400, error_type="invalid_request_error",
                     error_message="emulator: no scripted reply left for this request")

    # -- server ----------------------------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        from tests.fixtures.common import free_port

        port = free_port()
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._released = asyncio.Event()
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_post("/v1/messages", self._handle)
            self._runner = web.AppRunner(app, access_log=None)
            self._loop.run_until_complete(self._runner.setup())
            self._loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", port).start())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-anthropic", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("Messages API emulator did not start")
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self._loop and self._thread:
            if self._released is not None:
                self._loop.call_soon_threadsafe(self._released.set)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        rec = Recorded({k.lower(): v for k, v in request.headers.items()}, {}, raw)
        self.requests.append(rec)
        try:
            rec.body = json.loads(raw or b"{}")
        except ValueError:
            return self._error(rec, 400, "invalid_request_error", "body is not valid JSON")
        problem = (self._check_headers(rec.headers) or validate_request(rec.body, rec.headers)
                   or prompt_too_long(rec.body, self.max_prompt_tokens))
        if problem:
            return self._error(rec, *problem)
        reply = self._next_reply(rec.body)
        if reply.stall_after == -1 or (reply.stall_after is not None and not rec.body.get("stream")):
            await self._wait_released(None)  # a JSON reply cannot stop half-way: it never comes
            return self._error(rec, 500, "api_error", "emulator stopped while the reply was hung")
        if reply.gate is not None:
            await self._wait_gate(reply.gate)
        if reply.delay:
            await self._wait_released(reply.delay)
        if reply.status >= 400:
            return self._error(rec, reply.status, reply.error_type, reply.error_message, reply.headers)
        rec.status = 200
        rec.usage = self._usage(rec.body, reply)
        message = self._message(rec.body, reply, rec.usage)
        try:
            if rec.body.get("stream"):
                return await self._sse(request, message, reply.stall_after, reply.pace)
            return web.json_response(message, headers={"request-id": f"req_{uuid.uuid4().hex[:16]}"})
        finally:
            rec.answered = time.monotonic()

    async def _wait_gate(self, gate: threading.Event) -> None:
        while not gate.is_set() and not (self._released is not None and self._released.is_set()):
            await asyncio.sleep(0.01)  # the emulator's loop keeps serving other requests meanwhile

    async def _wait_released(self, seconds: float | None) -> None:
        assert self._released is not None
        try:
            await asyncio.wait_for(self._released.wait(), seconds)
        except TimeoutError:
            pass

    def _check_headers(self, headers: dict[str, str]) -> tuple[int, str, str] | None:
        if headers.get("x-api-key") != self.api_key:
            return 401, "authentication_error", "invalid x-api-key"
        if not headers.get("anthropic-version"):
            return 400, "invalid_request_error", "anthropic-version: header is required"
        return None

    def _error(self, rec: Recorded, status: int, kind: str, msg: str, headers: dict | None = None) -> web.Response:
        rec.status, rec.answered = status, time.monotonic()
        body = {"type": "error", "error": {"type": kind, "message": msg}}
        return web.json_response(body, status=status, headers={"request-id": "req_err", **(headers or {})})

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        total = estimate_tokens({k: body.get(k) for k in ("tools", "system", "messages")})
        created, read = cache_usage(body, self.cache, self.min_cache_tokens)
        out = max(1, estimate_tokens(reply.content))
        return {"input_tokens": max(1, total - created - read), "output_tokens": out,
                "cache_creation_input_tokens": created, "cache_read_input_tokens": read}

    @staticmethod
    def _message(body: dict[str, Any], reply: Reply, usage: dict[str, int]) -> dict[str, Any]:
        return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                "model": body.get("model", ""), "content": reply.content, "stop_reason": reply.stop_reason,
                "stop_sequence": None, "usage": usage}

    async def _sse(self, request: web.Request, message: dict[str, Any], stall_after: int | None,
                   pace: float = 0.0) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream", "cache-control": "no-cache"})
        await resp.prepare(request)
        for n, event in enumerate(sse_events(message)):
            if n == stall_after:
                await self._wait_released(None)  # the connection stays open and silent
                return resp
            if pace and n:
                await self._wait_released(pace)
            await resp.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await resp.write_eof()
        return resp
