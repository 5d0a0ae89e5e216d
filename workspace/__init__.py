"""The workspace on disk: init from templates, prompt files, cameras, skills, memory, state."""

from workspace.files import Camera, Workspace, WorkspaceError
from workspace.skills import Skill

__all__ = ["Camera", "Skill", "Workspace", "WorkspaceError"]
