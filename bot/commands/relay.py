"""One workspace, one truth: a `/vision` line typed beside the process that runs the workspace is answered by it.

The long-running process (`serve`, `api`, `mcp`, the REPL) holds its pipelines, rules, watches and jobs in memory; a
one-shot `chat -m '/vision status'` started beside it used to answer from an empty process of its own ("No
pipelines."). So the holder serves a local API: `POST /vision` on 127.0.0.1 (a free port), its address and a token
drawn at start in `.state/local_api.json` (owner-only, like the rest of `.state/`: whoever may read the token may
already read the camera URLs there). The one-shot finds it there, checks it was written by the process that holds the
workspace (`workspace/owner.py`), and sends the line; the holder runs it as the person at this machine's terminal
(the operator, with the files they may name, relative to where they typed it), and streams its progress lines, then
the reply. Every process kind serves it, with or without a REST API or Slack, and no env token is needed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import json
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.commands.context import CommandContext, CommandReply
from bot.commands.dispatch import run_command
from workspace.atomic import write_atomic

log = logging.getLogger(__name__)

FILE = "local_api.json"
KEEPALIVE = 5.0  # seconds between the holder's "still working" lines while a command runs
SILENT = 60.0  # seconds without a line after which the asker gives up on the holder
MAX_LINE = 8000  # characters of one /vision line (Slack's own limit on a slash command's text is 4000)
Progress = Callable[[str], Awaitable[None]]
# (session, progress, the asker's working directory) -> the context a relayed line runs in
ContextFor = Callable[[str, Progress, Path | None], CommandContext]


def encode(reply: CommandReply) -> dict[str, Any]:
    """A reply as JSON (its frame and file as base64; a digest is in its text in words)."""
    out: dict[str, Any] = {"text": reply.text, "ok": reply.ok, "frame_caption": reply.frame_caption,
                           "file_name": reply.file_name, "post_channel": reply.post_channel}
    for key in ("frame", "file"):
        data = getattr(reply, key)
        out[key] = base64.b64encode(data).decode() if data else None
    return out


def decode(data: dict[str, Any]) -> CommandReply:
    blobs = {k: base64.b64decode(data[k]) if isinstance(data.get(k), str) else None for k in ("frame", "file")}
    return CommandReply(str(data.get("text", "")), frame=blobs["frame"], frame_caption=str(data.get("frame_caption") or ""),
                        ok=bool(data.get("ok", True)), post_channel=data.get("post_channel"), file=blobs["file"],
                        file_name=str(data.get("file_name") or ""))


class LocalApi:
    """The holder's side: `await start()` serves it and writes where; `await stop()` ends it and removes the file."""

    def __init__(self, state_dir: Path, context_for: ContextFor) -> None:
        self.path = Path(state_dir) / FILE
        self.context_for = context_for
        self.token = secrets.token_urlsafe(32)
        self.url: str | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_post("/vision", self._vision)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        write_atomic(self.path, json.dumps({"url": self.url, "token": self.token, "pid": os.getpid()}))
        log.info("local API for /vision lines typed beside this process on %s", self.url)
        return self.url

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        with contextlib.suppress(OSError, ValueError):  # another holder may have written its own since
            if json.loads(self.path.read_text()).get("token") == self.token:
                self.path.unlink()
        await runner.cleanup()

    async def _vision(self, request: web.Request) -> web.StreamResponse:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
            return web.json_response({"error": "wrong token"}, status=401)
        try:
            body = await request.json()
        except ValueError:
            body = None
        text, session, cwd = (body.get(k) for k in ("text", "session", "cwd")) if isinstance(body, dict) else (None,) * 3
        if not isinstance(text, str) or len(text) > MAX_LINE or not isinstance(session, str):
            return web.json_response({"error": "send {\"text\": \"/vision …\", \"session\": NAME}"}, status=400)
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)

        async def progress(line: str) -> None:
            await resp.write(json.dumps({"progress": line}).encode() + b"\n")

        where = Path(cwd) if isinstance(cwd, str) and Path(cwd).is_absolute() else None
        running = asyncio.ensure_future(run_command(text, self.context_for(session[:80], progress, where)))
        while not running.done():  # a line now and then: the asker tells a slow command from a hung process
            await asyncio.wait([running], timeout=KEEPALIVE)
            if not running.done():
                await resp.write(b'{"waiting": true}\n')
        await resp.write(json.dumps({"reply": encode(running.result())}).encode() + b"\n")
        await resp.write_eof()
        return resp


def _address(state_dir: Path, holder: str) -> tuple[str, str] | None:
    """The url and token the workspace's holder wrote (None: none written, or by another process than `holder`)."""
    try:
        data = json.loads((Path(state_dir) / FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or str(data.get("pid")) != holder.strip():
        return None
    url, token = data.get("url"), data.get("token")
    return (url, token) if isinstance(url, str) and isinstance(token, str) else None


async def relay(state_dir: Path, holder: str, text: str, session: str,
                progress: Progress) -> CommandReply | None:
    """`text` answered by the process `holder` (its pid) that runs the workspace; None when it serves no local API
    (an older version, or it is still starting): the caller then says so itself."""
    address = _address(state_dir, holder)
    if address is None:
        return None
    url, token = address
    # a start takes as long as the detector loads, but the holder says it is still working every KEEPALIVE seconds
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=SILENT)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        try:
            resp = await http.post(f"{url}/vision", json={"text": text, "session": session, "cwd": os.getcwd()},
                                   headers={"Authorization": f"Bearer {token}"})
        except aiohttp.ClientConnectorError as exc:  # nothing ran there: the caller may answer itself
            log.info("local API of pid %s did not answer: %s", holder, exc)
            return None
        except (aiohttp.ClientError, TimeoutError) as exc:  # it may have taken the line: not run a second time
            log.info("local API of pid %s took the line and did not answer: %s", holder, exc)
            return _broke_off(holder)
        async with resp:
            if resp.status != 200:
                log.info("local API of pid %s answered %s", holder, resp.status)
                return None
            try:
                async for line in resp.content:
                    item = json.loads(line) if line.strip() else {}
                    if "progress" in item:
                        await progress(str(item["progress"]))
                    elif isinstance(item.get("reply"), dict):
                        return decode(item["reply"])
            except (aiohttp.ClientError, OSError, ValueError, TimeoutError) as exc:
                log.info("local API of pid %s broke off: %s", holder, exc)
    return _broke_off(holder)


def _broke_off(holder: str) -> CommandReply:
    """It took the line and stopped answering: it may have run it, so the line is not run a second time here."""
    return CommandReply(f"The vision-agent that runs this workspace (pid {holder}) took the command and stopped "
                        "answering before its reply; check `/vision status`.", ok=False)
