"""The holder's local API (bot/commands/relay.py) over a real socket: the token gate, the file that names it, a line
answered with its progress, and what the asker does when no such API answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import aiohttp

from bot.commands.context import CommandContext, CommandReply
from bot.commands.relay import FILE, LocalApi, relay
from bot.config import Settings


async def test_a_line_is_answered_with_its_progress_and_only_with_the_token(settings: Settings, tmp_path: Path) -> None:
    seen: list[tuple[str, Path | None]] = []

    def context_for(session, progress, cwd) -> CommandContext:
        seen.append((session, cwd))
        ctx = CommandContext(settings, operator=True)
        ctx.progress = progress
        return ctx

    api = LocalApi(tmp_path, context_for)
    url = await api.start()
    try:
        written = json.loads((tmp_path / FILE).read_text())
        assert written["url"] == url and written["pid"] == os.getpid() and (tmp_path / FILE).stat().st_mode & 0o077 == 0
        lines: list[str] = []

        async def progress(line: str) -> None:
            lines.append(line)

        reply = await relay(tmp_path, str(os.getpid()), "/vision help", "s1", progress)
        assert isinstance(reply, CommandReply) and reply.ok and "/vision <command>" in reply.text
        assert seen == [("s1", Path.cwd())]  # the asker's working directory rides along
        async with aiohttp.ClientSession() as http:
            for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": written["token"]}):
                async with http.post(f"{url}/vision", json={"text": "/vision help", "session": "x"},
                                     headers=headers) as resp:
                    assert resp.status == 401
            async with http.post(f"{url}/vision", json={"text": 3}, headers={
                    "Authorization": f"Bearer {written['token']}"}) as resp:
                assert resp.status == 400
    finally:
        await api.stop()
    assert not (tmp_path / FILE).exists()


async def test_no_api_or_one_written_by_another_process_is_not_used(settings: Settings, tmp_path: Path) -> None:
    async def progress(line: str) -> None:
        raise AssertionError(line)

    assert await relay(tmp_path, "12345", "/vision status", "s", progress) is None  # no file
    api = LocalApi(tmp_path, lambda s, p, c: CommandContext(settings, operator=True))
    await api.start()
    try:  # a file left by a pid that does not hold the workspace now
        assert await relay(tmp_path, str(os.getpid() + 1), "/vision status", "s", progress) is None
    finally:
        await api.stop()
    (tmp_path / FILE).write_text(json.dumps({"url": api.url, "token": api.token, "pid": os.getpid()}))
    assert await relay(tmp_path, str(os.getpid()), "/vision status", "s", progress) is None  # refused: nobody there
