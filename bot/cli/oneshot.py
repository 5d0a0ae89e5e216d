"""One message from the command line (`chat -m TEXT [--image PATH]`): only the final reply goes to stdout."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bot.agent.tools import Attachment
from bot.cli.render import save_frame
from bot.events import EventType
from bot.llm.errors import NO_KEY
from bot.media.redaction import redact
from bot.media.sniff import CHAT_TYPES, DEFAULT_MAX_PIXELS, check_image
from bot.rights import OPERATOR

if TYPE_CHECKING:
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


def one_shot(settings: Settings, text: str, images: list[str], session: str) -> int:
    """`chat -m TEXT`: the final reply on stdout; exit 0, 1 on an ERROR event, 2 for what the user must fix."""
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
    return asyncio.run(_one_shot(settings, text, attachments, session))


async def _one_shot(settings: Settings, text: str, attachments: list[Attachment], session: str) -> int:
    # Here, not at the top: the runtime loads the LLM SDK, the backends and monitoring, and one_shot's usage errors
    # (no key, empty message, bad image) answer without it.
    from bot.runtime import Runtime

    async with Runtime(settings, background=False) as rt:  # one question: no pipeline restore, no heartbeat
        if not rt.llm_ready:
            print(f"vision-agent: {why_no_agent(rt)}", file=sys.stderr)
            return 1
        reply, failed = None, False
        try:
            async for ev in rt.agent.process_message(f"cli:{session}", text, attachments, OPERATOR):
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
    if reply is not None:
        print(redact(reply))  # model text: a URL it repeats must not carry a camera's password to the terminal
    return 1 if failed or reply is None else 0


def why_no_agent(rt: Runtime) -> str:
    return rt.llm_unavailable() or NO_KEY
