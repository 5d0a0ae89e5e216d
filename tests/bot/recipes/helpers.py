"""Recipe test set-up: the agent's real pieces (registry, manager, recipe service) over a given backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.agent.registry import ToolRegistry
from bot.commands.context import CommandContext
from bot.config import Settings
from bot.pipelines.manager import PipelineManager
from bot.recipes.service import RecipeService
from bot.rights import LOCAL_CHANNEL
from bot.services import Services
from tools import build_registry
from workspace import Workspace


@dataclass
class Rig:
    settings: Settings
    ws: Workspace
    mgr: PipelineManager
    tools: ToolRegistry
    services: Services
    recipes: RecipeService

    def command(self, user: str = LOCAL_CHANNEL, channel: str = LOCAL_CHANNEL, session: str | None = None) -> CommandContext:
        return CommandContext(self.settings, self.services, user_id=user, channel_id=channel, session_key=session,
                              operator=user == LOCAL_CHANNEL)


def rig(settings: Settings, backend: Any, timeout: float = 20.0) -> Rig:
    ws = Workspace(settings.workspace)
    ws.init()
    mgr = PipelineManager(lambda: backend, ws.state_dir / "active_state.json", settings)
    tools = build_registry()
    recipes = RecipeService(ws, settings, tools, first_result_timeout=timeout)
    services = Services(workspace=ws, pipelines=mgr, recipes=recipes)
    return Rig(settings, ws, mgr, tools, services, recipes)

