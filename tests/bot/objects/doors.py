"""Every door of the bot, over one running runtime: `/vision` words (Slack and the terminal), the model's tools, MCP,
the REST API and recipe replay. Tests of what members create walk an object through each door with this."""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from mcp import types

from bot.agent.tools import ToolContext, ToolResult
from bot.commands.dispatch import run_command
from bot.config import Settings
from bot.mcp.adapter import McpAdapter
from bot.objects.table import OPERATIONS
from bot.rights import OPERATOR, Requester
from bot.runtime import Runtime
from tests.bot.api.test_api import run_api
from tests.bot.mcp.helpers import decoded
from tests.tools.fake_backend import FakeBackend

TOKEN = "doors-api-token-0123456789"
CAMERAS = "| Name | URL |\n|---|---|\n| dock | rtsp://10.0.0.5/s1 |\n| gate | rtsp://10.0.0.6/s1 |\n"
ALICE = Requester.slack("U0ALICE", "C0OPS", "public", "Alice")


class Doors:
    """One runtime (with its scheduler), its REST API and its MCP adapter; each door returns the text it answers."""

    def __init__(self, rt: Runtime, backend: FakeBackend | Any, base: str, http: aiohttp.ClientSession) -> None:
        self.rt, self.backend, self.base, self.http = rt, backend, base, http
        self.mcp = McpAdapter(rt)

    async def slash(self, line: str, who: Requester = OPERATOR) -> str:
        ctx = self.rt.command_context(who.user_id, who.channel_id, operator=who.operator)
        return (await run_command(line, ctx)).text

    async def tool(self, name: str, data: dict[str, Any], who: Requester = OPERATOR, key: str = "cli:doors") -> str:
        return (await self.tool_result(name, data, who, key)).text

    async def tool_result(self, name: str, data: dict[str, Any], who: Requester = OPERATOR,
                          key: str = "cli:doors") -> ToolResult:
        """The whole result of the tool the model calls (text, frame, data), through the registry as the agent runs it."""
        ctx = ToolContext(settings=self.rt.settings, session_key=key, services=self.rt.services, requester=who)
        return await self.rt.tools.execute(name, data, ctx)

    async def mcp_call(self, name: str, data: dict[str, Any]) -> str:
        return decoded(await self.mcp_result(name, data))[0]

    async def mcp_result(self, name: str, data: dict[str, Any]) -> types.CallToolResult:
        return await self.mcp.call_tool(name, data)

    async def post(self, path: str, body: bytes, content_type: str, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """A raw body (an image) to a REST path, its other arguments in the query string."""
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type}
        async with self.http.post(self.base + path, data=body, params=params, headers=headers) as resp:
            return resp.status, await resp.json()

    async def rest(self, op: str, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        method, path = OPERATIONS[op].rest.split()  # type: ignore[union-attr]
        sent: dict[str, Any] = {"params": {k: str(v) for k, v in data.items()}} if method == "GET" else {"json": data}
        async with self.http.request(method, self.base + path, headers={"Authorization": f"Bearer {TOKEN}"},
                                     **sent) as resp:
            return resp.status, await resp.json()

    async def replay(self, data: dict[str, Any]) -> str:
        """A recipe whose one step is this start (as a recipe saved by hand or by an older version holds it), run."""
        recipe = {"name": "walk", "description": "", "version": 1, "parameters": {},
                  "steps": [{"tool": "start_pipeline", "input": data}],
                  "metadata": {"created_by": "operator", "successes": 0, "failures": 0, "step_failures": {}}}
        (self.rt.workspace.root / "recipes").mkdir(exist_ok=True)
        (self.rt.workspace.root / "recipes" / "walk.json").write_text(json.dumps(recipe))
        return await self.slash("recipe run walk")

    @staticmethod
    def words(*parts: Any) -> str:
        return shlex.join(str(p) for p in parts)


async def open_doors(settings: Settings, backend: Any = None) -> AsyncIterator[Doors]:
    """Every door over one runtime on the fake backend, or on `backend` (a real one: the same frames at every door)."""
    async for api in run_api(settings, CAMERAS, background=True, backend=backend):  # with its scheduler: every door
        yield Doors(api.rt, api.backend, api.base, api.http)


def settings_env(base_env: dict[str, str], **extra: str) -> dict[str, str]:
    return dict(base_env, VISION_AGENT_API_TOKEN=TOKEN, **extra)


def workspace_of(settings: Settings) -> Path:
    return Path(settings.workspace)
