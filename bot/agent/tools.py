"""The tool contract every tool and adapter speaks: typed argument models, one frozen result, the per-call context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from bot.media.attachments import Attachment
from bot.rights import Requester
from bot.services import Services

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.llm.client import ToolCall
    from bot.monitoring.search.moments import Moments
    from workspace import Workspace

__all__ = ["Attachment", "Tool", "ToolArgs", "ToolContext", "ToolFunc", "ToolResult"]


class ToolArgs(BaseModel):
    """Base for tool argument models: unknown keys are an error the model can fix."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns.

    text: what the model reads (keep it short: summaries, not raw dumps).
    image: JPEG bytes the model should see (sent as an image block, resized to <= 640 px).
    frame: annotated JPEG bytes to show the *user* (adapters upload it; the agent emits a FRAME event).
    frame_caption: short caption for that frame.
    data: the same result as JSON-able data, for doors that hand structure on (REST's body, MCP's
        structuredContent): run_inference's boxes. The model reads `text` only.
    moments: a search's moments, for adapters that show them (Slack: a table and the best frames; the agent emits
        a MOMENTS event).
    """

    text: str
    is_error: bool = False
    image: bytes | None = None
    frame: bytes | None = None
    frame_caption: str = ""
    data: dict[str, Any] | None = None
    moments: Moments | None = None

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls(text=text, is_error=True)


@dataclass
class ToolContext:
    """Everything a tool may need, injected per call by the agent."""

    settings: Settings
    session_key: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    services: Services = field(default_factory=Services)  # typed: ctx.services.pipelines, ctx.services.memory
    requester: Requester = field(default_factory=Requester)  # who asked this turn (nobody known: refused by allowlists)
    turn: list[tuple[ToolCall, ToolResult]] = field(default_factory=list)  # this turn's calls so far: save_recipe reads it

    @property
    def workspace(self) -> Workspace | None:
        """The camera registry and files (with settings and attachments: a `bot.media.resolve.MediaScope`)."""
        return self.services.workspace


ToolFunc = Callable[[Any, ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class Tool:
    """A registered tool: name, description, argument model and the coroutine that runs it.

    changes: what the tool changes (`bot.rights.CONTROLLED`, `bot.rights.MEMORY`), so the registry checks the
    asker against the Slack allowlists before it runs; None for tools that only read or compute.
    """

    name: str
    description: str
    args_model: type[BaseModel]  # a ToolArgs, or an object's model (bot/objects/table.py)
    func: ToolFunc
    changes: str | None = None

    def definition(self) -> dict[str, Any]:
        """The Messages API tool definition, schema generated from the argument model."""
        schema = _lean(self.args_model.model_json_schema())
        schema.pop("description", None)  # the model's docstring is for developers; the tool's description says it
        return {"name": self.name, "description": self.description, "input_schema": schema}


def _lean(schema: Any) -> Any:
    """The schema without pydantic's generated titles ("Source" for `source`): tokens in every request, no meaning."""
    if isinstance(schema, dict):
        return {k: _lean(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_lean(v) for v in schema]
    return schema
