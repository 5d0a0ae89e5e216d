"""Memory tools: remember (daily log / KNOWLEDGE.md) and recall (search over memory)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tools.base import ToolArgs, ToolContext, ToolResult
from tools.registry import ToolRegistry


class RememberArgs(ToolArgs):
    content: str = Field(min_length=1, description="What to remember")
    category: Literal["observation", "knowledge", "preference"] = Field(
        "observation", description="'observation' goes to today's log; 'knowledge'/'preference' to KNOWLEDGE.md"
    )
    camera_id: str | None = Field(None, description="Associated camera, for observations")


class RecallArgs(ToolArgs):
    query: str = Field(min_length=1, description="What to look for")
    max_results: int = Field(5, ge=1, le=20)


async def remember(args: RememberArgs, ctx: ToolContext) -> ToolResult:
    memory = ctx.service("memory")
    path = memory.store(args.content, args.category, camera_id=args.camera_id)
    return ToolResult(text=f"Saved to {path.name}.")


async def recall(args: RecallArgs, ctx: ToolContext) -> ToolResult:
    memory = ctx.service("memory")
    hits = memory.search(args.query, max_results=args.max_results)
    if not hits:
        return ToolResult(text=f"Nothing in memory matches {args.query!r}.")
    lines = [f"- [{h.source}] {h.text.strip()}" for h in hits]
    return ToolResult(text="\n".join(lines))


def register(reg: ToolRegistry) -> None:
    reg.register(
        "remember",
        "Store an observation, fact or user preference in persistent memory. Use it for significant events, "
        "patterns, or anything the user asks you to remember.",
        RememberArgs,
        remember,
    )
    reg.register(
        "recall",
        "Search memory for past observations, knowledge or preferences relevant to a query.",
        RecallArgs,
        recall,
    )
