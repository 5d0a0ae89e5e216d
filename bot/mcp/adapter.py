"""The MCP server: the agent's registry tools (same names, schemas, results) plus read-only views, as the operator.

Thin like the Slack and CLI adapters: a call becomes `ToolRegistry.execute(...)` with the operator as requester,
and the ToolResult becomes MCP content (its text, then its image as an ImageContent).
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.server.lowlevel import Server
from pydantic import AnyUrl

from bot.agent.tools import ToolContext, ToolResult
from bot.commands.dispatch import run_command
from bot.media.redaction import redact
from bot.media.sniff import media_type_of
from bot.rights import LOCAL_CHANNEL, OPERATOR

if TYPE_CHECKING:
    from bot.runtime import Runtime

log = logging.getLogger(__name__)

SESSION_KEY = "mcp"  # tools that keep per-session state see one MCP session (the operator's)
SCHEME = "vision-agent://"


@dataclass(frozen=True)
class View:
    """A read-only view offered both as a tool (clients that only speak tools) and as a resource."""

    name: str
    description: str
    command: str | None  # the `/vision` command whose text it is (one implementation of each listing)


VIEWS = (
    View("list_cameras", "The cameras registered in CAMERAS.md (credentials masked).", None),
    View("list_rules", "The alert rules that run per camera, with their ids and cooldowns.", "rules"),
    View("list_watches", "The one-shot watches that run (id, camera, condition, time left).", "watches"),
    View("get_status", "Pipelines, alert routes, mutes, rules, watches and scheduled jobs in one text.", "status"),
)
EVENTS_RESOURCE = "events"  # the last day of the event log, as get_events() shows it


class McpAdapter:
    """Builds the MCP `Server` over a started Runtime; `read_only` hides (and refuses) every tool that changes."""

    def __init__(self, runtime: Runtime, read_only: bool | None = None) -> None:
        self.rt = runtime
        self.read_only = runtime.settings.mcp.read_only if read_only is None else read_only
        self.server: Server[Any, Any] = Server("vision-agent")
        self._wire()

    # what is offered ---------------------------------------------------------
    def offered(self) -> list[dict[str, Any]]:
        """Registry definitions this server exposes: all, or in read-only mode those whose tool changes nothing."""
        defs = self.rt.tools.definitions()
        return [d for d in defs if not self.read_only or self._changes(d["name"]) is None]

    def _changes(self, name: str) -> str | None:
        tool = self.rt.tools.get(name)
        return tool.changes if tool is not None else None

    def _wire(self) -> None:
        srv = self.server
        srv.list_tools()(self.list_tools)
        srv.call_tool(validate_input=False)(self.call_tool)  # the registry validates: same errors as the agent's
        srv.list_resources()(self.list_resources)
        srv.read_resource()(self.read_resource)

    async def list_tools(self) -> list[types.Tool]:
        tools = [types.Tool(name=d["name"], description=d["description"], inputSchema=d["input_schema"])
                 for d in self.offered()]
        empty = {"type": "object", "properties": {}, "additionalProperties": False}
        return tools + [types.Tool(name=v.name, description=v.description, inputSchema=empty) for v in VIEWS]

    # calls -------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        view = next((v for v in VIEWS if v.name == name), None)
        if view is not None:
            return _content(ToolResult(await self._view(view)))
        if self.read_only and (what := self._changes(name)):
            return _content(ToolResult.error(
                f"{name} changes {what}, and this MCP server is read-only (mcp.read_only in config.yaml)."))
        result = await self.rt.tools.execute(name, arguments or {}, self.tool_context())
        return _content(result)

    def tool_context(self) -> ToolContext:
        """The operator's context: an MCP client is whoever runs this process (or holds its HTTP token)."""
        rt = self.rt
        return ToolContext(settings=rt.settings, session_key=SESSION_KEY, services=rt.services, requester=OPERATOR)

    async def _view(self, view: View) -> str:
        if view.command is None:
            cams = self.rt.workspace.cameras()
            lines = [f"- {c.name}: {redact(c.url)}" + (f" ({c.location})" if c.location else "") for c in cams]
            return "\n".join(["Cameras (CAMERAS.md):"] + lines) if lines else "No cameras in CAMERAS.md yet."
        ctx = self.rt.command_context(channel_id=LOCAL_CHANNEL, operator=True)
        return (await run_command(view.command, ctx)).text

    # resources -----------------------------------------------------------------------
    async def list_resources(self) -> list[types.Resource]:
        out = [types.Resource(uri=AnyUrl(SCHEME + v.name.removeprefix("list_").removeprefix("get_")), name=v.name,
                              description=v.description, mimeType="text/plain") for v in VIEWS]
        out.append(types.Resource(uri=AnyUrl(SCHEME + EVENTS_RESOURCE), name=EVENTS_RESOURCE, mimeType="text/plain",
                                  description="Alerts and tier-1 events of the last 24 hours (get_events)."))
        return out

    async def read_resource(self, uri: AnyUrl) -> str:
        key = str(uri).removeprefix(SCHEME).strip("/")
        if key == EVENTS_RESOURCE:
            res = await self.rt.tools.execute("get_events", {}, self.tool_context())
            return res.text
        view = next((v for v in VIEWS if v.name.removeprefix("list_").removeprefix("get_") == key), None)
        if view is None:
            names = ", ".join(str(r.uri) for r in await self.list_resources())
            raise ValueError(f"no resource {str(uri)[:80]!r}; there are {names}")
        return await self._view(view)


def _content(result: ToolResult) -> types.CallToolResult:
    """A ToolResult as MCP content: the text, then the image the model would see and the frame a person would; its
    data (run_inference's boxes) as structured content."""
    blocks: list[types.TextContent | types.ImageContent] = [types.TextContent(type="text", text=result.text)]
    for img in dict.fromkeys(b for b in (result.image, result.frame) if b):  # once when they are the same JPEG
        blocks.append(types.ImageContent(type="image", data=base64.b64encode(img).decode(), mimeType=media_type_of(img) or "image/jpeg"))
    return types.CallToolResult(content=list(blocks), structuredContent=result.data, isError=result.is_error)
