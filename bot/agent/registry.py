"""ToolRegistry: holds the tools, generates their definitions, executes calls as data (never raises)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.agent.tools import Tool, ToolContext, ToolFunc, ToolResult
from bot.media.cameras import cameras, hide_camera_urls
from bot.media.redaction import redact
from bot.objects.refusal import explain
from bot.objects.table import OPERATIONS
from bot.objects.text import shield
from bot.rights import refusal, unattended_refusal

log = logging.getLogger(__name__)


class ToolRegistry:
    """Named tools; `execute` turns every failure into an is_error result the model can act on."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._definitions: list[dict[str, Any]] | None = None  # schemas are generated once, not per turn

    def register(self, name: str, description: str, args_model: type[BaseModel], func: ToolFunc, *,
                 changes: str | None = None) -> None:
        """Add a tool; `changes` names what it changes, and only people the allowlists admit may run it."""
        if name in self._tools:
            raise ValueError(f"tool {name!r} registered twice")
        self._tools[name] = Tool(name, description, args_model, func, changes)
        self._definitions = None

    def register_operation(self, name: str, func: ToolFunc) -> None:
        """Add the tool of an operation of the one table (bot/objects/table.py): its model, description and what it
        changes come from there, as the REST body and the `/vision` words of the same operation do."""
        op = OPERATIONS[name]
        self.register(name, op.summary, op.spec, func, changes=op.changes)

    def tool(self, name: str, description: str, args_model: type[BaseModel], *, changes: str | None = None):
        """Decorator form of `register`."""

        def wrap(func: ToolFunc) -> ToolFunc:
            self.register(name, description, args_model, func, changes=changes)
            return func

        return wrap

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def definitions(self) -> list[dict[str, Any]]:
        """Tool definitions in registration order (stable, so the cached prefix stays byte-identical)."""
        if self._definitions is None:
            self._definitions = [t.definition() for t in self._tools.values()]
        return [dict(d) for d in self._definitions]

    async def execute(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run one call; the result's texts name cameras instead of their URLs and are credential-redacted,
        whatever the tool put in them."""
        result = await self._execute(name, raw_input, ctx)
        # Tool results reach the model, the transcript and the user: one exit, so one rule for all tools. Whatever a
        # member or a source wrote that a tool repeats cannot open or close our markup (bot/objects/text.py shield).
        cams = _registry(ctx)
        return replace(result, text=shield(redact(hide_camera_urls(result.text, cams))),
                       frame_caption=redact(hide_camera_urls(result.frame_caption, cams)),
                       data=_masked(result.data, cams))

    async def _execute(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(f"Unknown tool {name!r}. Available tools: {', '.join(self._tools)}.")
        # Data is not instructions: a turn no person asked for reads frames and text anyone may have written, so
        # it gets the same single classification (`changes`) as MCP read-only mode, unless the operator opts in.
        if why := unattended_refusal(ctx.settings, ctx.requester, name, tool.changes):
            log.warning("tool %s refused in unattended session %s", name, ctx.session_key)
            return ToolResult.error(why)
        # Rights follow the person: the same check as `/vision` control commands and the alert buttons.
        if tool.changes and (why := refusal(ctx.settings, ctx.requester, tool.changes)):
            log.info("tool %s refused for %s in %s", name, ctx.requester.user_id, ctx.requester.channel_id)
            return ToolResult.error(why)
        try:
            args = tool.args_model.model_validate(raw_input or {})
        except ValidationError as exc:
            line = explain(exc, tool.args_model)
            if name in OPERATIONS:  # a member's object: the very line every door gives (bot/objects/refusal.py)
                return ToolResult.error(line)
            return ToolResult.error(f"Invalid arguments for {name}: {line} Fix them and call again.")
        try:
            return await tool.func(args, ctx)
        except Exception as exc:  # tool failures are data, the loop goes on
            log.exception("tool %s failed", name)
            return ToolResult.error(f"{name} failed: {type(exc).__name__}: {exc}")


def _masked(data: Any, cams: dict[str, str]) -> Any:
    """A result's data with every string masked as its text is (a workflow's output may echo a camera URL)."""
    if isinstance(data, str):
        return redact(hide_camera_urls(data, cams))
    if isinstance(data, dict):
        return {_masked(k, cams): _masked(v, cams) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_masked(v, cams) for v in data]
    return data


def _registry(ctx: ToolContext) -> dict[str, str]:
    try:
        return cameras(ctx.workspace, ctx.settings)
    except Exception:  # no workspace to read (a bare context): redaction alone still applies
        return {}
