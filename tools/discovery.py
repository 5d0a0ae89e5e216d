"""Workflow discovery tools: list_workflow_blocks, get_block_details."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.backends.base import BackendError
from bot.backends.policy import deliberately_refused, refusal
from bot.services import need
from tools.block_catalog import (
    CATEGORIES,
    block_id,
    categories,
    details,
    find_block,
    latest_versions,
    short_description,
    suggestions,
)


class ListBlocksArgs(ToolArgs):
    category: str | None = Field(
        None,
        description="model, analytics, visualization, transformation, sink, flow_control, classical_cv, fusion, tracking",
    )


class BlockDetailsArgs(ToolArgs):
    block_type: str = Field(description="e.g. 'roboflow_core/line_counter@v2'")


LIST_LIMIT_CHARS = 6000
PER_CATEGORY_PREVIEW = 6


async def _blocks(ctx: ToolContext) -> list[dict[str, Any]]:
    """The catalogue without the blocks this bot refuses (bot/backends/policy): the model is not offered them."""
    backend = await need(ctx.services.backend, "the inference backend").aget()
    blocks = await backend.describe_blocks()
    return [b for b in blocks if not deliberately_refused(block_id(b), ctx.settings.inference)]


def _entry(block: dict[str, Any], older: list[str]) -> str:
    also = f" (also {', '.join(older)})" if older else ""
    return f"- {block_id(block)}{also}: {short_description(block)}"


def _overview(families: list[tuple[dict[str, Any], list[str]]]) -> str:
    lines = [f"{len(families)} block families. A few per category; call again with category= for the full list."]
    for cat in CATEGORIES:
        members = [(b, o) for b, o in families if cat in categories(b)]
        if not members:
            continue
        lines.append(f"## {cat} ({len(members)})")
        lines += [_entry(b, o) for b, o in members[:PER_CATEGORY_PREVIEW]]
    return "\n".join(lines)


def _capped(lines: list[str]) -> str:
    out, size = [], 0
    for i, line in enumerate(lines):
        if size + len(line) > LIST_LIMIT_CHARS:
            out.append(f"… {len(lines) - i} more; use get_block_details on a name you expect, e.g. a tracker or counter.")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


async def list_workflow_blocks(args: ListBlocksArgs, ctx: ToolContext) -> ToolResult:
    try:
        families = latest_versions(await _blocks(ctx))
    except (BackendError, LookupError) as exc:
        return ToolResult.error(str(exc))
    if not args.category:
        return ToolResult(text=_capped(_overview(families).split("\n")))
    cat = args.category.strip().lower().replace(" ", "_").replace("-", "_")
    cat = {"classical_computer_vision": "classical_cv", "models": "model", "sinks": "sink"}.get(cat, cat)
    if cat not in CATEGORIES:
        return ToolResult.error(f"unknown category {args.category!r}; use one of: {', '.join(CATEGORIES)}.")
    members = [(b, o) for b, o in families if cat in categories(b)]
    head = f"## {cat}: {len(members)} block families (newest version shown)"
    return ToolResult(text=_capped([head] + [_entry(b, o) for b, o in members]))


async def get_block_details(args: BlockDetailsArgs, ctx: ToolContext) -> ToolResult:
    try:
        blocks = await _blocks(ctx)
    except (BackendError, LookupError) as exc:
        return ToolResult.error(str(exc))
    block = find_block(blocks, args.block_type)
    if block is None and deliberately_refused(args.block_type.strip(), ctx.settings.inference):
        return ToolResult.error(f"The {refusal(args.block_type.strip())}.")
    if block is None:
        close = suggestions(blocks, args.block_type)
        hint = f" Did you mean: {', '.join(close)}?" if close else " Use list_workflow_blocks to see the names."
        return ToolResult.error(f"no block {args.block_type!r}.{hint}")
    return ToolResult(text=details(block))


def register(reg: ToolRegistry) -> None:
    reg.register(
        "list_workflow_blocks",
        "List available workflow blocks (one line each: type and what it does), optionally by category: "
        "model, analytics, visualization, transformation, sink, flow_control, classical_cv, fusion, tracking. "
        "Use before composing a custom workflow.",
        ListBlocksArgs,
        list_workflow_blocks,
    )
    reg.register(
        "get_block_details",
        "Get one workflow block's inputs (required ones marked), outputs with their kinds, and a minimal example "
        "step. Use before putting the block in a workflow_spec.",
        BlockDetailsArgs,
        get_block_details,
    )
