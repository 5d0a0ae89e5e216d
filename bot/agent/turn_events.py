"""A turn's events and their rules (final reply kind, thinking, frames, HEARTBEAT_OK); what turn-end hooks get."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.agent.tools import Attachment, ToolResult
from bot.events import AgentEvent, EventType
from bot.llm.client import LLMResponse, ToolCall
from bot.rights import Requester

log = logging.getLogger(__name__)

_OK_TOKEN = "HEARTBEAT_OK"
_DECOR = " \t\r\n*_`~.!:;'\"()[]"


def is_heartbeat_ok(text: str) -> bool:
    """True when a heartbeat reply means "nothing notable" (exact, decorated, or leading/trailing a short reply)."""
    t = (text or "").strip()
    if t.strip(_DECOR).upper() == _OK_TOKEN:
        return True
    if len(t) >= 300:
        return False
    bare = t.strip(_DECOR).upper()
    return bare.startswith(_OK_TOKEN) or bare.endswith(_OK_TOKEN)


@dataclass(frozen=True)
class FinishedTurn:
    """A turn that ended with its final event (a reply, a question, or an error line), for the turn-end hooks."""

    session_key: str
    requester: Requester
    steps: list[tuple[ToolCall, ToolResult]]  # the tool calls the turn made, in order
    final: AgentEvent  # RESPONSE, ASK_USER or ERROR
    heartbeat: bool = False  # a heartbeat turn, not a conversation


TurnHook = Callable[[FinishedTurn], None]  # runs after the turn, on the turn's task; must not block


def _ev(kind: EventType, **data: Any) -> AgentEvent:
    return AgentEvent(kind, data)


def _noted(ev: AgentEvent, note: str) -> AgentEvent:
    """The turn's last event with a note for the user in front (e.g. that their message was cut)."""
    if not note or ev.type not in (EventType.RESPONSE, EventType.ASK_USER, EventType.ERROR):
        return ev
    sep = " " if ev.type is EventType.ERROR else "\n\n"  # an error stays one line
    return AgentEvent(ev.type, {**ev.data, "text": f"{note}{sep}{ev.data.get('text', '')}"}, ev.timestamp)


def _asks_user(text: str) -> bool:
    lines = [ln.strip(" *_`>\t") for ln in text.strip().splitlines() if ln.strip(" *_`>\t")]
    return bool(lines) and lines[-1].endswith("?")


def final_event(resp: LLMResponse, mode: str, max_tokens: int) -> AgentEvent:
    """The turn's last event from the model's last reply."""
    text = resp.text
    if resp.stop_reason == "max_tokens":
        return _ev(EventType.ERROR, text=(
            f"the reply was cut off at {max_tokens} tokens; ask for a shorter answer "
            "or raise llm.max_tokens in config.yaml"))
    if mode == "heartbeat":
        return _ev(EventType.RESPONSE, text=text or _OK_TOKEN)  # silence means nothing to report
    if not text:
        return _ev(EventType.ERROR, text="the model returned an empty reply; please ask again")
    return _ev(EventType.ASK_USER if _asks_user(text) else EventType.RESPONSE, text=text)


def thinking_events(resp: LLMResponse) -> list[AgentEvent]:
    out = [_ev(EventType.THINKING, text=t) for t in resp.thinking if t.strip()]
    if resp.tool_calls and resp.text:
        out.append(_ev(EventType.THINKING, text=resp.text))
    return out


def frame_event(frames_dir: Path, call: ToolCall, result: ToolResult) -> AgentEvent:
    """A FRAME event for a tool's annotated frame, saved under WORKSPACE/frames/DAY/ (path None if it cannot be)."""
    path: str | None = None
    try:
        now = datetime.now()
        folder = Path(frames_dir) / now.strftime("%Y-%m-%d")
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / f"{now.strftime('%H%M%S_%f')}_{call.name}_{call.id[-8:]}.jpg"
        file.write_bytes(result.frame or b"")
        path = str(file)
    except (OSError, AttributeError) as exc:
        log.warning("could not save frame from %s: %s", call.name, exc)
    return _ev(EventType.FRAME, image=result.frame, caption=result.frame_caption or call.name, path=path)


def file_record(att: Attachment) -> dict[str, Any]:
    return {"path": str(att.path), "media_type": att.media_type, "file_id": att.file_id, "name": att.name}


def attachment_of(rec: dict[str, Any]) -> Attachment:
    return Attachment(Path(rec["path"]), rec.get("media_type") or "image/jpeg", rec.get("file_id"), rec.get("name") or "")
