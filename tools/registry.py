"""ToolRegistry: holds the tools, generates their definitions, executes calls as data (never raises)."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from tools.base import Tool, ToolArgs, ToolContext, ToolFunc, ToolResult

log = logging.getLogger(__name__)


class ToolRegistry:
    """Named tools; `execute` turns every failure into an is_error result the model can act on."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._definitions: list[dict[str, Any]] | None = None  # schemas are generated once, not per turn

    def register(self, name: str, description: str, args_model: type[ToolArgs], func: ToolFunc) -> None:
        if name in self._tools:
            raise ValueError(f"tool {name!r} registered twice")
        self._tools[name] = Tool(name, description, args_model, func)
        self._definitions = None

    def tool(self, name: str, description: str, args_model: type[ToolArgs]):
        """Decorator form of `register`."""

        def wrap(func: ToolFunc) -> ToolFunc:
            self.register(name, description, args_model, func)
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
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(f"Unknown tool {name!r}. Available tools: {', '.join(self._tools)}.")
        try:
            args = tool.args_model.model_validate(raw_input or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
            )
            return ToolResult.error(f"Invalid arguments for {name}: {problems}. Fix them and call again.")
        try:
            return await tool.func(args, ctx)
        except Exception as exc:  # tool failures are data, the loop goes on
            log.exception("tool %s failed", name)
            return ToolResult.error(f"{name} failed: {type(exc).__name__}: {exc}")
