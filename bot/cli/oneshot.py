"""One message from the command line (`chat -m TEXT [--image PATH]`): only the final reply goes to stdout."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.agent.tools import Attachment
from bot.cli.render import LOADING_DETECTOR, Renderer, save_frame, terminal_text
from bot.cli.stages import ASKING, Stages
from bot.commands.dispatch import run_command
from bot.commands.relay import relay
from bot.events import EventType
from bot.llm.errors import NO_KEY
from bot.media.redaction import redact
from bot.media.sniff import CHAT_TYPES, DEFAULT_MAX_PIXELS, check_image
from bot.process import Lifetime
from bot.rights import OPERATOR
from workspace import Workspace
from workspace.owner import OwnerLock

if TYPE_CHECKING:
    from bot.commands.context import CommandContext
    from bot.config import Settings
    from bot.runtime import Runtime

log = logging.getLogger(__name__)


def has_key(settings: Settings) -> bool:
    key = settings.llm.api_key
    return key is not None and bool(key.get_secret_value().strip())


def attachment_for(path_text: str, max_pixels: int = DEFAULT_MAX_PIXELS) -> Attachment:
    """An Attachment for an image file; ValueError with a one-line reason if it is not a readable image.

    Only the header is read: an image over max_pixels is refused before anything decodes it.
    """
    path = Path(path_text).expanduser()
    try:
        media = check_image(path, max_pixels, f"image {path_text}").media_type
    except FileNotFoundError:
        raise ValueError(f"image {path_text} does not exist") from None
    except OSError as exc:
        raise ValueError(f"image {path_text} cannot be read ({exc.strerror or exc})") from None
    if media not in CHAT_TYPES:
        raise ValueError(f"{path_text} is not a JPEG, PNG, GIF or WebP image")
    return Attachment(path=path.resolve(), media_type=media, name=path.name)


def terminal_context(rt: Runtime, session: str, progress: Callable[[str], Awaitable[None]] | None) -> CommandContext:
    """The context of a `/vision` line typed at this terminal: the operator, who may also name local files."""
    return rt.terminal_context(session, progress)


def is_command(text: str) -> bool:
    return text.strip().split(maxsplit=1)[:1] == ["/vision"]


def one_shot(settings: Settings, text: str, images: list[str], session: str) -> int:
    """`chat -m TEXT`: the final reply on stdout; exit 0, 1 on an ERROR event, 2 for what the user must fix.

    A `/vision` line needs no model: it runs without an API key, as in the REPL.
    """
    if is_command(text):
        stages = Stages().start()
        return _run(lambda lifetime: _one_command(settings, text.strip(), session, stages, lifetime), stages)
    if not has_key(settings):
        print(f"vision-agent: {NO_KEY}", file=sys.stderr)
        return 2
    if not text.strip():
        print("vision-agent: the message is empty; pass some text with -m", file=sys.stderr)
        return 2
    try:
        attachments = [attachment_for(p, settings.media.max_pixels) for p in images]
    except ValueError as exc:
        print(f"vision-agent: {exc}", file=sys.stderr)
        return 2
    stages = Stages().start()  # the first line within seconds of a cold start: imports alone take some
    return _run(lambda lifetime: _one_shot(settings, text, attachments, session, stages, lifetime), stages)


def _run(work: Callable[[Lifetime], Coroutine[Any, Any, int]], stages: Stages) -> int:
    """Run a one-shot under a Lifetime: Ctrl-C or SIGTERM cancels it, the runtime closes (a pipeline it started
    stops), and one last line says so; exit 130 (Ctrl-C) or 143 (SIGTERM)."""
    lifetime = Lifetime("vision-agent")

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None

        def stop() -> None:
            lifetime.code = 130 if lifetime.cause == "Ctrl-C" else 143
            task.cancel()

        lifetime.install(stop)
        try:
            return await work(lifetime)
        except asyncio.CancelledError:
            stages.close()
            return lifetime.finish(lifetime.code)
        finally:
            stages.close()

    return asyncio.run(main())


async def _one_shot(settings: Settings, text: str, attachments: list[Attachment], session: str,
                    stages: Stages, lifetime: Lifetime) -> int:
    # Here, not at the top: the runtime loads the LLM SDK, the backends and monitoring, and one_shot's usage errors
    # (no key, empty message, bad image) answer without it.
    from bot.runtime import Runtime

    async with Runtime(settings, background=False) as rt:  # one question: no pipeline restore, no heartbeat
        lifetime.holds = rt.leaving  # a pipeline the model started here stops with the process
        if not rt.llm_ready:
            print(f"vision-agent: {why_no_agent(rt)}", file=sys.stderr)
            return 1
        stages.note = lambda: LOADING_DETECTOR if rt.backend.loading else None
        stages.stage(ASKING)
        reply, failed = None, False
        try:
            async for ev in rt.agent.process_message(f"cli:{session}", text, attachments, OPERATOR):
                stages.event(ev)
                if ev.type in (EventType.RESPONSE, EventType.ASK_USER):
                    reply = ev.data.get("text", "")
                elif ev.type is EventType.ERROR:
                    failed = True
                    print(f"vision-agent: {redact(ev.data.get('text', 'error'))}", file=sys.stderr)
                elif ev.type is EventType.FRAME:
                    path = ev.data.get("path") or save_frame(rt.workspace.frames_dir, ev.data)
                    print(f"annotated frame: {path}", file=sys.stderr)
        except Exception as exc:  # a bug must still end in one line, not a traceback (details with -v)
            log.info("turn failed", exc_info=True)  # shown with -v
            print(f"vision-agent: the turn failed: {type(exc).__name__}: {redact(str(exc))} (run with -v for details)",
                  file=sys.stderr)
            return 1
        finally:
            stages.close()
    if reply is not None:
        print(redact(reply))  # model text: a URL it repeats must not carry a camera's password to the terminal
    return 1 if failed or reply is None else 0


async def _one_command(settings: Settings, text: str, session: str, stages: Stages, lifetime: Lifetime) -> int:
    """One `/vision` line: progress lines on stderr, the reply (and a snapshot's saved path) on stdout."""
    from bot.runtime import Runtime  # start-up cost, as in _one_shot

    async def progress(line: str) -> None:
        print(terminal_text(line).plain, file=sys.stderr, flush=True)  # the core's Slack markup, as plain text

    verb = (text.split()[1:2] or [""])[0]
    ws = Workspace(settings.workspace)
    holder = OwnerLock(ws.state_dir).held_elsewhere()
    if holder is not None:  # the process that runs the workspace answers, from what it holds (one truth)
        stages.close()  # the relay says its own slow steps
        reply = await relay(ws.state_dir, holder, text, session, progress)
        if reply is not None:
            Renderer().command_reply(reply, ws.frames_dir)
            return 0 if reply.ok else 1
    async with Runtime(settings, background=False) as rt:
        lifetime.holds = rt.leaving
        stages.close()  # from here the command says its own slow steps (a start: "loading the detector…")
        owner = rt.owner.held_elsewhere()
        if owner is not None and verb in OWNER_KEEPS:
            print(f"vision-agent: {BESIDE.format(pid=owner)} Type `/vision {verb} …` there (its terminal chat, Slack, "
                  "the REST API or MCP).", file=sys.stderr)
            return 1
        reply = await run_command(text, terminal_context(rt, session, progress))
        Renderer().command_reply(reply, rt.workspace.frames_dir)
        if owner is not None and verb in OWNER_SHOWS:
            print(f"vision-agent: {BESIDE.format(pid=owner)} Its pipelines are not listed here; ask it (its chat, "
                  "Slack, GET /api/pipelines or MCP).", file=sys.stderr)
        if reply.ok and text.split()[1:2] == ["start"]:
            print("vision-agent: this process ends now, and its pipeline with it (not saved, not restored later); to "
                  "keep one running, start it in `vision-agent chat` or through the running bot (Slack, API, MCP).",
                  file=sys.stderr)
    return 0 if reply.ok else 1


# A running bot (serve, the chat, api, mcp) holds its pipelines, rules, watches and jobs in memory and reads them at
# start; a one-shot beside it would store a change that process never sees (and may later overwrite). It answers such
# lines itself (bot/commands/relay.py); these are for one that does not (still starting, or an older version).
OWNER_KEEPS = {"rule", "unrule", "watch", "unwatch", "schedule", "unschedule"}
OWNER_SHOWS = {"status", "list", "stop", "pause", "resume", "snapshot", "watches", "rules", "jobs"}
BESIDE = ("this workspace is run by another vision-agent (pid {pid}), which keeps its cameras' state in memory and "
          "does not answer lines typed beside it (it is still starting, or an older version).")


def why_no_agent(rt: Runtime) -> str:
    return rt.llm_unavailable() or NO_KEY
