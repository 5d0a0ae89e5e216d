"""The agent loop: build the prompt, call Claude, run tools, loop; yields AgentEvents for adapters to render."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from bot import messages as msgs
from bot.context_guard import ContextGuard, turn_starts
from bot.events import AgentEvent, EventType
from bot.llm import LLMError, LLMResponse, ToolCall
from bot.prompt import build_system, skills_in, skills_reloaded, turn_context
from tools.base import Attachment, ToolContext, ToolResult

log = logging.getLogger(__name__)

HEARTBEAT_TURNS_KEPT = 3
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


def _ev(kind: EventType, **data: Any) -> AgentEvent:
    return AgentEvent(kind, data)


def _asks_user(text: str) -> bool:
    lines = [ln.strip(" *_`>\t") for ln in text.strip().splitlines() if ln.strip(" *_`>\t")]
    return bool(lines) and lines[-1].endswith("?")


class Agent:
    """One small loop, everything injected (CONVENTIONS 4). Turns of a session serialize on its lock."""

    def __init__(
        self,
        *,
        llm: Any,
        tools: Any,
        sessions: Any,
        settings: Any,
        workspace: Any,
        services: dict[str, Any] | None = None,
        capabilities: str | Callable[[], str] = "",
        pipelines_text: Callable[[], str] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.llm, self.tools, self.sessions = llm, tools, sessions
        self.settings, self.workspace = settings, workspace
        # The same dict the composition root holds, so services it adds later reach the tools too.
        self.services = services if services is not None else {}
        self.services.setdefault("workspace", workspace)
        self._capabilities = capabilities
        self._pipelines_text = pipelines_text
        self._clock = clock or datetime.now
        self._active: dict[str, int] = {}
        self.guard = ContextGuard(llm, sessions, settings.llm.context_window, self.services)

    # -- public API ------------------------------------------------------------------------------------------

    async def process_message(
        self, session_key: str, text: str, attachments: Sequence[Attachment] | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Run one user turn; yields THINKING/TOOL_CALL/TOOL_RESULT/FRAME events, then RESPONSE, ASK_USER or ERROR."""
        atts = list(attachments or [])
        async with self._turn(session_key):
            skills = self._match_skills(text)
            earlier = skills_in(self.sessions.history(session_key))
            context = turn_context(self.workspace, self._pipelines(), skills, self._clock(), earlier)
            user_msg = msgs.user_message(text, atts, context)
            self.sessions.add_files(session_key, [_file_record(a) for a in atts])
            # Tools may use any file shared earlier in this session (by path or Slack file id), newest first.
            shared = [_attachment(f) for f in reversed(self.sessions.files(session_key))]
            async for ev in self._run(session_key, user_msg, "full", shared, skills):
                yield ev

    async def process_heartbeat(
        self, text: str, frames: Sequence[bytes] = (), session_key: str = "heartbeat"
    ) -> AsyncIterator[AgentEvent]:
        """Run a heartbeat turn in its own session; a HEARTBEAT_OK reply yields no RESPONSE."""
        async with self._turn(session_key):
            self._trim_heartbeat(session_key)
            context = turn_context(None, self._pipelines(), (), self._clock())
            async for ev in self._run(session_key, msgs.heartbeat_message(text, frames, context), "heartbeat", []):
                if ev.type is EventType.RESPONSE and is_heartbeat_ok(ev.data["text"]):
                    log.info("heartbeat %s: nothing notable", session_key)
                    continue
                yield ev

    def seed_session(self, key: str, text: str, image: bytes | None = None) -> None:
        """Record a message the agent posted (e.g. an alert) as a user/assistant pair, so replies have context."""
        for message in msgs.seed_pair(text, image):
            self.sessions.append(key, message)

    def busy(self, prefix: str = "") -> bool:
        """Whether a turn is running or queued in any session whose key starts with prefix."""
        return any(k.startswith(prefix) and n > 0 for k, n in self._active.items())

    async def wait_idle(self, prefix: str = "", poll: float = 0.05) -> None:
        """Wait until no session with this key prefix has a turn running (works from any event loop)."""
        while self.busy(prefix):
            await asyncio.sleep(poll)

    # -- the loop --------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def _turn(self, key: str):
        self._active[key] = self._active.get(key, 0) + 1
        try:
            async with self.sessions.lock(key):
                yield
        finally:
            self._active[key] -= 1

    async def _run(
        self, key: str, user_msg: dict[str, Any], mode: str, atts: list[Attachment], skills: Sequence[str] = ()
    ) -> AsyncIterator[AgentEvent]:
        self._repair(key)
        # The turn context rides in user_msg and so in the history: the system prompt never changes between
        # turns, and every earlier turn stays a cached prefix of the next request.
        self.sessions.append(key, user_msg)
        system = build_system(self.workspace, self.tools, mode, self._caps())
        defs = self.tools.definitions()
        ctx = ToolContext(self.settings, key, atts, self.services)
        for _ in range(self.settings.llm.max_iterations):
            if await self.guard.maybe_compact(key, system, defs):
                self._restore_skills(key, skills)
                yield _ev(EventType.THINKING, text="The conversation got long: older turns were summarised into memory.")
            try:
                history = self.sessions.history(key)
                resp = await self.llm.chat(history, defs, system, session_key=key)
            except LLMError as exc:
                yield _ev(EventType.ERROR, text=str(exc))
                return
            except Exception as exc:  # an SDK or programming error must end the turn with a line, not a traceback
                log.exception("LLM call failed in session %s", key)
                yield _ev(EventType.ERROR, text=f"internal error calling the model ({type(exc).__name__}: {exc}); "
                                                "see the log, then try again")
                return
            self.guard.mark(key, resp.usage, len(history))
            if resp.content_blocks:
                self.sessions.append(key, {"role": "assistant", "content": resp.content_blocks})
            for ev in self._thinking_events(resp):
                yield ev
            if not resp.tool_calls:
                yield self._final(resp, mode)
                return
            async for ev in self._run_tools(key, resp.tool_calls, ctx):
                yield ev
        yield _ev(EventType.ERROR, text=(
            f"stopped after {self.settings.llm.max_iterations} tool rounds (llm.max_iterations); "
            "ask me to continue or raise llm.max_iterations in config.yaml"))

    async def _run_tools(self, key: str, calls: list[ToolCall], ctx: ToolContext) -> AsyncIterator[AgentEvent]:
        results: list[dict[str, Any]] = []
        try:
            for call in calls:
                yield _ev(EventType.TOOL_CALL, id=call.id, name=call.name, input=call.input)
                result = await self.tools.execute(call.name, call.input, ctx)
                yield _ev(EventType.TOOL_RESULT, id=call.id, name=call.name, text=result.text,
                          is_error=result.is_error)
                if result.frame:
                    yield self._frame_event(call, result)
                results.append(msgs.tool_result_block(call.id, result))
        finally:
            # Even when the turn is cancelled mid-tool, every tool_use gets its tool_result.
            done = {r["tool_use_id"] for r in results}
            results += [msgs.interrupted_result(c.id) for c in calls if c.id not in done]
            self.sessions.append(key, {"role": "user", "content": results})

    def _final(self, resp: LLMResponse, mode: str) -> AgentEvent:
        text = resp.text
        if resp.stop_reason == "max_tokens":
            return _ev(EventType.ERROR, text=(
                f"the reply was cut off at {self.settings.llm.max_tokens} tokens; ask for a shorter answer "
                "or raise llm.max_tokens in config.yaml"))
        if mode == "heartbeat":
            return _ev(EventType.RESPONSE, text=text or _OK_TOKEN)  # silence means nothing to report
        if not text:
            return _ev(EventType.ERROR, text="the model returned an empty reply; please ask again")
        return _ev(EventType.ASK_USER if _asks_user(text) else EventType.RESPONSE, text=text)

    @staticmethod
    def _thinking_events(resp: LLMResponse) -> list[AgentEvent]:
        out = [_ev(EventType.THINKING, text=t) for t in resp.thinking if t.strip()]
        if resp.tool_calls and resp.text:
            out.append(_ev(EventType.THINKING, text=resp.text))
        return out

    def _frame_event(self, call: ToolCall, result: ToolResult) -> AgentEvent:
        path: str | None = None
        try:
            now = datetime.now()
            folder = Path(self.workspace.frames_dir) / now.strftime("%Y-%m-%d")
            folder.mkdir(parents=True, exist_ok=True)
            file = folder / f"{now.strftime('%H%M%S_%f')}_{call.name}_{call.id[-8:]}.jpg"
            file.write_bytes(result.frame or b"")
            path = str(file)
        except (OSError, AttributeError) as exc:
            log.warning("could not save frame from %s: %s", call.name, exc)
        return _ev(EventType.FRAME, image=result.frame, caption=result.frame_caption or call.name, path=path)

    # -- helpers ---------------------------------------------------------------------------------------------

    def _caps(self) -> str:
        return self._capabilities() if callable(self._capabilities) else self._capabilities

    def _pipelines(self) -> str:
        if self._pipelines_text is None:
            return ""
        try:
            return self._pipelines_text()
        except Exception as exc:  # the prompt must still build when the pipeline registry is unhappy
            log.warning("pipelines summary failed: %s", exc)
            return f"(pipeline status unavailable: {exc})"

    def _match_skills(self, text: str) -> list[str]:
        match = getattr(self.workspace, "match_skills", None)
        return [s.name for s in match(text)] if match else []

    def _restore_skills(self, key: str, skills: Sequence[str]) -> None:
        # A skill this turn only pointed to ("loaded earlier") may have been summarised away: load it again.
        missing = [s for s in skills if s not in skills_in(self.sessions.history(key))]
        text = skills_reloaded(self.workspace, missing) if missing else ""
        if text:
            self.sessions.append(key, {"role": "user", "content": [{"type": "text", "text": text}]})

    def _repair(self, key: str) -> None:
        """After a crash mid-tool the transcript may end with a tool_use and no result: close it."""
        history = self.sessions.history(key)
        if history and history[-1]["role"] == "assistant":
            ids = [b["id"] for b in history[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
            if ids:
                self.sessions.append(key, {"role": "user", "content": [msgs.interrupted_result(i) for i in ids]})

    def _trim_heartbeat(self, key: str) -> None:
        # Heartbeats repeat forever: keep the last few checks (with this one) so the cost per check stays flat.
        starts = turn_starts(self.sessions.history(key))
        if len(starts) >= HEARTBEAT_TURNS_KEPT:
            self.sessions.compact(key, "Earlier heartbeat checks were trimmed; anything notable was reported then.",
                                  starts[-(HEARTBEAT_TURNS_KEPT - 1)])


def _file_record(att: Attachment) -> dict[str, Any]:
    return {"path": str(att.path), "media_type": att.media_type, "file_id": att.file_id, "name": att.name}


def _attachment(rec: dict[str, Any]) -> Attachment:
    return Attachment(Path(rec["path"]), rec.get("media_type") or "image/jpeg", rec.get("file_id"), rec.get("name") or "")
