"""System prompt blocks: a stable, cached prefix (identity, workspace files, capabilities) and a dynamic tail."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from bot.prompt_text import CORE_IDENTITY, DEFAULT_HEARTBEAT_CHECKLIST, HEARTBEAT_IDENTITY

log = logging.getLogger(__name__)

CACHE = {"type": "ephemeral"}
PROMPT_FILES = ("AGENTS.md", "USER.md", "CAMERAS.md")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_line(tools: Any) -> str:
    names = list(getattr(tools, "names", None) or [])
    return f"\n\nTools available in this process: {', '.join(names)}." if names else ""


def _workspace_blocks(workspace: Any, only: Iterable[str] = PROMPT_FILES) -> list[dict[str, Any]]:
    files = workspace.load_prompt_files() if workspace is not None else {}
    wanted = set(only)
    # A fixed order, whatever order the loader used, so the cached prefix never reshuffles.
    names = [n for n in PROMPT_FILES if n in files and n in wanted]
    names += sorted(n for n in files if n not in PROMPT_FILES and n in wanted)
    return [_text(f"# {name}\n\n{files[name].strip()}") for name in names if files[name].strip()]


def stable_blocks(workspace: Any, tools: Any, mode: str, capabilities: str) -> list[dict[str, Any]]:
    """The cacheable prefix; byte-identical between turns unless a workspace file or capability changes."""
    if mode == "heartbeat":
        checklist = (workspace.heartbeat_checklist() if workspace is not None else "").strip()
        blocks = [_text(HEARTBEAT_IDENTITY + _tool_line(tools))]
        blocks += _workspace_blocks(workspace, only=("CAMERAS.md",))
        blocks.append(_text("# HEARTBEAT.md (checklist)\n\n" + (checklist or DEFAULT_HEARTBEAT_CHECKLIST)))
    else:
        blocks = [_text(CORE_IDENTITY + _tool_line(tools))]
        blocks += _workspace_blocks(workspace)
        if capabilities.strip():
            blocks.append(_text(capabilities.strip()))
    blocks[-1]["cache_control"] = dict(CACHE)
    return blocks


def _skills_text(workspace: Any, skills_loaded: Iterable[str]) -> list[dict[str, Any]]:
    skills = workspace.list_skills() if workspace is not None else []
    blocks: list[dict[str, Any]] = []
    if skills:
        lines = [f"- {s.name}: {s.description}" for s in skills]
        blocks.append(_text(
            "## Skills\nDomain instructions in the workspace. The ones matching a request are loaded below; "
            "if another one applies, say which and follow it after the user agrees.\n" + "\n".join(lines)
        ))
    for name in skills_loaded:
        body = workspace.load_skill(name) if workspace is not None else None
        if body:
            blocks.append(_text(f"## Skill loaded for this request: {name}\n\n{body.strip()}"))
        else:
            log.warning("skill %s matched but could not be loaded", name)
    return blocks


def dynamic_blocks(
    workspace: Any, pipelines_text: str, skills_loaded: Iterable[str], now: datetime | None = None
) -> list[dict[str, Any]]:
    """The per-turn tail: time, active pipelines, skills. Never cached, so it may change every call."""
    now = (now or datetime.now()).astimezone()
    blocks = [_text(f"Current time: {now.strftime('%A %Y-%m-%d %H:%M %Z')}")]
    blocks.append(_text("## Active pipelines\n" + (pipelines_text.strip() or "None running.")))
    return blocks + _skills_text(workspace, skills_loaded)


def build_system(
    workspace: Any,
    tools: Any = None,
    mode: Literal["full", "heartbeat"] = "full",
    pipelines_text: str = "",
    skills_loaded: Iterable[str] = (),
    capabilities: str = "",
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """System prompt content blocks: stable blocks (last one carries cache_control) then the dynamic tail.

    Args:
        workspace: a `workspace.Workspace` (prompt files, heartbeat checklist, skills) or None.
        tools: the ToolRegistry, to name the tools in the prompt.
        mode: "full" for conversations, "heartbeat" for the lighter scheduled check.
        pipelines_text: a short summary of running pipelines.
        skills_loaded: names of skills whose full SKILL.md goes into this turn's tail.
        capabilities: block/model summary text (stable; part of the cached prefix).
        now: the time to show (defaults to the local time).
    """
    if mode == "heartbeat":
        skills_loaded = ()
    stable = stable_blocks(workspace, tools, mode, capabilities)
    return stable + dynamic_blocks(workspace if mode == "full" else None, pipelines_text, skills_loaded, now)
