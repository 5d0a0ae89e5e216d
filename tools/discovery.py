"""Workflow discovery tools: list_workflow_blocks, get_block_details."""

from __future__ import annotations

from pydantic import Field

from tools.base import ToolArgs, ToolContext, ToolResult
from tools.registry import ToolRegistry


class ListBlocksArgs(ToolArgs):
    category: str | None = Field(
        None,
        description="model, analytics, visualization, transformation, sink, flow_control, classical_cv, fusion, tracking",
    )


class BlockDetailsArgs(ToolArgs):
    block_type: str = Field(description="e.g. 'roboflow_core/line_counter@v2'")


NOT_YET = "not available yet: block discovery is not wired into this build"


async def list_workflow_blocks(args: ListBlocksArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.error(NOT_YET)


async def get_block_details(args: BlockDetailsArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.error(NOT_YET)


def register(reg: ToolRegistry) -> None:
    reg.register(
        "list_workflow_blocks",
        "List available workflow blocks, optionally by category. Use before composing a custom workflow.",
        ListBlocksArgs,
        list_workflow_blocks,
    )
    reg.register(
        "get_block_details",
        "Get the schema, inputs, outputs and an example step for one workflow block.",
        BlockDetailsArgs,
        get_block_details,
    )
