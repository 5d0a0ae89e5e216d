"""Shared pieces for the MCP tests: the `vision-agent mcp` subprocess environment, the agent's own results to compare."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Any

from mcp import types

from bot.agent.tools import ToolResult
from bot.config import load_settings
from bot.mcp.adapter import McpAdapter
from bot.runtime import Runtime
from tests.fakes.waits import patience

VISION_AGENT = Path(sys.executable).with_name("vision-agent")  # the installed console script, as a client runs it
TOKEN = "mcp-test-token-4f1c2b9e"  # noqa: S105 - a test token


def server_env(workspace: Path, **extra: str) -> dict[str, str]:
    """The subprocess environment: this workspace, offline models, no proxies, nothing of the developer's keys."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and not k.startswith(("VISION_AGENT_", "SLACK_", "ANTHROPIC_"))}
    env.update(VISION_AGENT_WORKSPACE=str(workspace), VISION_AGENT_HEARTBEAT_MINUTES="0", HF_HUB_OFFLINE="1", **extra)
    return env


def decoded(result: types.CallToolResult) -> tuple[str, list[bytes], bool]:
    """(text, images, is_error) of an MCP tool result."""
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    images = [base64.b64decode(c.data) for c in result.content if isinstance(c, types.ImageContent)]
    return "\n".join(texts), images, bool(result.isError)


def as_agent_sees(result: ToolResult) -> tuple[str, list[bytes], bool]:
    """The same triple from the agent's ToolResult: its text, its image and frame (once if the same), is_error."""
    images = list(dict.fromkeys(b for b in (result.image, result.frame) if b))
    return result.text, images, result.is_error


def agent_call(workspace: Path, name: str, arguments: dict[str, Any]) -> ToolResult:
    """What the agent's registry returns for this call, in this process (the operator's context, like the CLI)."""
    async def run() -> ToolResult:
        settings = load_settings(server_env(workspace))
        async with Runtime(settings, background=False) as rt:
            return await rt.tools.execute(name, arguments, McpAdapter(rt).tool_context())

    return asyncio.run(run())


async def until_finished(session: Any, name: str, timeout: float = 90.0) -> str:
    """Poll list_pipelines over MCP until the pipeline `name` has finished; its status line."""
    deadline = asyncio.get_running_loop().time() + patience(timeout)
    while asyncio.get_running_loop().time() < deadline:
        text, _, _ = decoded(await session.call_tool("list_pipelines", {}))
        line = next((ln for ln in text.splitlines() if ln.startswith(f"{name} ")), "")
        if "finished" in line or "error" in line:
            return line
        await asyncio.sleep(0.5)
    raise AssertionError(f"pipeline {name} did not finish in {timeout:.0f}s")
