"""The agent loop: build the prompt, call Claude, run tools, loop; yields AgentEvents for adapters to render."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from bot.agent import blocks as msgs
from bot.agent.compaction import ContextGuard, turn_starts
from bot.agent.prompt import build_system, recipes_text, skills_in, skills_reloaded, turn_context
from bot.agent.quoting import Said
from bot.agent.streaming import TextStream
from bot.agent.tools import Attachment, ToolContext, ToolResult
from bot.agent.turn_events import (
    FinishedTurn,
    TurnHook,
    _ev,
    _noted,
    attachment_of,
    file_record,
    final_event,
    frame_event,
    is_heartbeat_ok,
    thinking_events,
)
from bot.events import AgentEvent, EventType
from bot.llm.budget import payer_of
from bot.llm.client import LLMClient, LLMError, PromptTooLong, ToolCall, WaitBudget
from bot.media.cameras import cameras, hide_camera_urls
from bot.rights import MEMORY, UNATTENDED, Requester, audience, refusal, unattended_refusal
from bot.services import Services

if TYPE_CHECKING:
    from bot.agent.registry import ToolRegistry
    from bot.agent.sessions import SessionStore
    from bot.config import Settings
    from workspace import Workspace

log = logging.getLogger(__name__)

HEARTBEAT_TURNS_KEPT = 3


class Agent:
    """One small loop, everything injected (so tests build it from fakes). Turns of a session serialize on its lock."""

    def __init__(
        self,
        *,
        llm: LLMClient,
        tools: ToolRegistry,
        sessions: SessionStore,
        settings: Settings,
        workspace: Workspace,
        services: Services | None = None,
        capabilities: str | Callable[[], str] = "",
        pipelines_text: Callable[[], str] | None = None,
        clock: Callable[[], datetime] | None = None,
        turn_end: Iterable[TurnHook] = (),
    ) -> None:
        self.llm, self.tools, self.sessions = llm, tools, sessions
        self.settings, self.workspace = settings, workspace
        self.services = services if services is not None else Services(workspace=workspace)
        self._capabilities = capabilities
        self._pipelines_text = pipelines_text
        self._clock = clock or datetime.now
        self._active: dict[str, int] = {}
        # Called after every turn that ended with its final event (the recipes keep the turns that set things up);
        # the loop knows nothing of what its subscribers do.
        self.turn_end: list[TurnHook] = list(turn_end)
        self.guard = ContextGuard(llm, sessions, settings.llm.context_window, self.services.memory,
                                  settings.llm.max_message_tokens)

    # -- public API ------------------------------------------------------------------------------------------

    async def process_message(
        self, session_key: str, text: str, attachments: Sequence[Attachment] | None = None,
        requester: Requester | None = None, earlier: Sequence[Said] = (),
    ) -> AsyncIterator[AgentEvent]:
        """Run one user turn; yields THINKING/TEXT_DELTA/TOOL_CALL/TOOL_RESULT/FRAME events, then RESPONSE,
        ASK_USER or ERROR (which carry the whole final text again).

        requester: who asked (Slack person, `bot.rights.OPERATOR` for the CLI, `UNATTENDED` for cron); tools that
        change state check it against the allowlists. None is an unknown asker, refused whenever one is set.
        A Slack person's text is marked with their id and name and the system prompt names them as the asker.
        earlier: what others wrote in the thread before the bot was asked, marked with their authors.
        """
        who = requester if requester is not None else Requester()
        atts = list(attachments or [])
        async with self._turn(session_key):
            skills = self._match_skills(text)
            loaded = skills_in(self.sessions.history(session_key))
            context = turn_context(self.workspace, self._pipelines(), skills, self._clock(), loaded,
                                   recipes_text(self.workspace, audience(who)))
            # Cut before it reaches the history: one oversize message must not make the thread too long for good.
            text, cut_note = self.guard.clip(text)
            # Decoded off the event loop with a time limit: a slow image gets a line, other users are served meanwhile.
            shown = await msgs.attachment_blocks(atts, self.settings.media.decode_timeout_seconds)
            user_msg = msgs.user_message(text, atts, context, shown, who, earlier)
            self.sessions.add_files(session_key, [file_record(a) for a in atts])
            # Tools may use any file shared earlier in this session (by path or Slack file id), newest first.
            shared = [attachment_of(f) for f in reversed(self.sessions.files(session_key))]
            async for ev in self._run(session_key, user_msg, "full", shared, who, skills):
                yield _noted(ev, cut_note)

    async def process_heartbeat(
        self, text: str, frames: Sequence[bytes] = (), session_key: str = "heartbeat", who: Requester = UNATTENDED
    ) -> AsyncIterator[AgentEvent]:
        """Run a heartbeat turn in its own session; a HEARTBEAT_OK reply yields no RESPONSE. `who`: unattended,
        billed to a member when it is their scheduled heartbeat (`Requester.unattended_for`)."""
        async with self._turn(session_key):
            self._trim_heartbeat(session_key)
            context = turn_context(None, self._pipelines(), (), self._clock())
            # No person asks a heartbeat: it acts for the operator, with read-only tools unless the operator opts in.
            # Our own frames, but still decoded off the event loop: a slow one never stalls other people's turns.
            shown = await msgs.frame_blocks(frames, self.settings.media.decode_timeout_seconds, "a heartbeat frame")
            message = msgs.heartbeat_message(self._named(text), frames, context, shown)
            async for ev in self._run(session_key, message, "heartbeat", [], who if who.unattended else UNATTENDED):
                if ev.type is EventType.RESPONSE and is_heartbeat_ok(ev.data["text"]):
                    log.info("heartbeat %s: nothing notable", session_key)
                    continue
                yield ev

    async def seed_session(self, key: str, text: str, image: bytes | None = None) -> None:
        """Record a message the agent posted (e.g. an alert) as a user/assistant pair, so replies have context;
        its image is decoded off the event loop."""
        timeout = self.settings.media.decode_timeout_seconds
        shown = await msgs.frame_blocks([image] if image else [], timeout, "the alert's frame")
        for message in msgs.seed_pair(self._named(text), image, shown):
            self.sessions.append(key, message)

    @property
    def llm_available(self) -> bool:
        """Whether a turn can reach the model now (an API key is set): a heartbeat is skipped otherwise."""
        return self.llm.available

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
        self, key: str, user_msg: dict[str, Any], mode: Literal["full", "heartbeat"], atts: list[Attachment],
        who: Requester, skills: Sequence[str] = (),
    ) -> AsyncIterator[AgentEvent]:
        self._repair(key)
        # The turn context rides in user_msg and so in the history: the system prompt never changes between
        # turns, and every earlier turn stays a cached prefix of the next request.
        self.sessions.append(key, user_msg)
        system = build_system(self.workspace, self.tools, mode, self._caps(), who)
        defs = self.tools.definitions()
        steps: list[tuple[ToolCall, ToolResult]] = []  # this turn's calls, kept as a trajectory if it ends well
        ctx = ToolContext(self.settings, key, atts, self.services, who, steps)
        budget = WaitBudget(self.settings.llm.turn_timeout)  # the turn's model wait, retries and summaries included
        squeezed = False
        for _ in range(self.settings.llm.max_iterations):
            if await self.guard.maybe_compact(key, system, defs, budget, self._memory_writer(who), payer_of(who)):
                self._restore_skills(key, skills)
                yield _ev(EventType.THINKING, text="The conversation got long: older turns were summarised into memory.")
            try:
                history = self.sessions.history(key)
                # The stream is consumed within this iteration, so the lambda sees this iteration's history.
                call = TextStream(lambda sink: self.llm.chat(history, defs, system, session_key=key,  # noqa: B023
                                                             budget=budget, on_text=sink if mode == "full" else None,
                                                             payer=payer_of(who)))
                async for ev in call:  # the answer as it is generated, for adapters that show it live
                    yield ev
                resp = call.result()
            except PromptTooLong as exc:
                self.guard.too_long(key)  # the next maybe_compact summarises all but the current turn
                if squeezed:  # compacting once did not help: one line; the next turn starts by compacting
                    yield _ev(EventType.ERROR, text=str(exc))
                    return
                squeezed = True
                continue
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
            for ev in thinking_events(resp):
                yield ev
            if not resp.tool_calls:
                final = final_event(resp, mode, self.settings.llm.max_tokens)
                self._turn_ended(FinishedTurn(key, who, steps, final, heartbeat=mode == "heartbeat"))
                yield final
                return
            async for ev in self._run_tools(key, resp.tool_calls, ctx, steps):
                yield ev
        yield _ev(EventType.ERROR, text=(
            f"stopped after {self.settings.llm.max_iterations} tool rounds (llm.max_iterations); "
            "ask me to continue or raise llm.max_iterations in config.yaml"))

    async def _run_tools(self, key: str, calls: list[ToolCall], ctx: ToolContext,
                         steps: list[tuple[ToolCall, ToolResult]]) -> AsyncIterator[AgentEvent]:
        results: list[dict[str, Any]] = []
        try:
            for call in calls:
                yield _ev(EventType.TOOL_CALL, id=call.id, name=call.name, input=call.input)
                result = await self.tools.execute(call.name, call.input, ctx)
                steps.append((call, result))
                yield _ev(EventType.TOOL_RESULT, id=call.id, name=call.name, text=result.text,
                          is_error=result.is_error)
                if result.frame:
                    yield frame_event(self.workspace.frames_dir, call, result)
                if result.moments is not None and result.moments.moments:
                    yield _ev(EventType.MOMENTS, moments=result.moments)
                clipped = self.guard.clip_result(result)
                image = await msgs.result_image(clipped, self.settings.media.decode_timeout_seconds)
                results.append(msgs.tool_result_block(call.id, clipped, image))
        finally:
            # Even when the turn is cancelled mid-tool, every tool_use gets its tool_result.
            done = {r["tool_use_id"] for r in results}
            results += [msgs.interrupted_result(c.id) for c in calls if c.id not in done]
            self.sessions.append(key, {"role": "user", "content": results})

    def _memory_writer(self, who: Requester) -> str | None:
        # The compaction flush writes memory for the asker: the same rights as the remember tool, and its audience.
        if refusal(self.settings, who, MEMORY) or unattended_refusal(self.settings, who, "remember", MEMORY):
            return None
        return audience(who)

    def _turn_ended(self, turn: FinishedTurn) -> None:
        for hook in self.turn_end:
            try:
                hook(turn)
            except Exception:  # a hook's work is a by-product: the user still gets the reply
                log.exception("a turn-end hook failed for %s", turn.session_key)

    # -- helpers ---------------------------------------------------------------------------------------------

    def _caps(self) -> str:
        return self._capabilities() if callable(self._capabilities) else self._capabilities

    def _named(self, text: str) -> str:
        # The model learns cameras by name, never by address: status lines, heartbeat news and alert seeds alike.
        return hide_camera_urls(text, cameras(self.workspace, self.settings))

    def _pipelines(self) -> str:
        if self._pipelines_text is None:
            return ""
        try:
            return self._named(self._pipelines_text())
        except Exception as exc:  # the prompt must still build when the pipeline registry is unhappy
            log.warning("pipelines summary failed: %s", exc)
            return f"(pipeline status unavailable: {exc})"

    def _match_skills(self, text: str) -> list[str]:
        return [s.name for s in self.workspace.match_skills(text)]

    def _restore_skills(self, key: str, skills: Sequence[str]) -> None:
        # A skill this turn only pointed to ("loaded earlier") may have been summarised away: load it again.
        missing = [s for s in skills if s not in skills_in(self.sessions.history(key))]
        text = skills_reloaded(self.workspace, missing) if missing else ""
        if text:
            self.sessions.append(key, {"role": "user", "content": [{"type": "text", "text": text}]})

    def _repair(self, key: str) -> None:
        """Close what an earlier turn left open (msgs.closing_messages), before this turn's message."""
        for message in msgs.closing_messages(self.sessions.history(key)):
            self.sessions.append(key, message)

    def _trim_heartbeat(self, key: str) -> None:
        # Heartbeats repeat forever: keep the last few checks (with this one) so the cost per check stays flat.
        starts = turn_starts(self.sessions.history(key))
        if len(starts) >= HEARTBEAT_TURNS_KEPT:
            self.sessions.compact(key, "Earlier heartbeat checks were trimmed; anything notable was reported then.",
                                  starts[-(HEARTBEAT_TURNS_KEPT - 1)])

