"""The think tool: a scratchpad with no side effects (the thought is only recorded in the history)."""

from __future__ import annotations

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult


class ThinkArgs(ToolArgs):
    thought: str = Field(description="Your step-by-step reasoning")


async def think(args: ThinkArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult(text="")


def register(reg: ToolRegistry) -> None:
    reg.register(
        "think",
        "Think through a problem step by step before acting: plan a workflow, weigh ambiguous results, "
        "choose between approaches. No side effects.",
        ThinkArgs,
        think,
    )
