"""The agent's tools: one module per family, each with `register(registry)`; `build_registry()` wires them."""

from __future__ import annotations

from bot.agent.registry import ToolRegistry
from tools import (
    cameras,
    clips,
    digest,
    discovery,
    inference,
    jobs,
    memory,
    pipelines,
    reasoning,
    recipes,
    rules,
    watches,
)
from tools import events as event_tools  # get_events: what happened, read from the event log
from tools import search as search_tools  # search_events: the past by words and meaning

# Order matters: definitions are emitted in this order and the last one carries cache_control.
TOOL_NAMES = [
    "run_inference",
    "ask_about_image",
    "detect_zero_shot",
    "start_pipeline",
    "get_pipeline_results",
    "get_clip_frames",
    "list_pipelines",
    "camera_readiness",
    "stop_pipeline",
    "pause_pipeline",
    "resume_pipeline",
    "set_alert_rule",
    "save_recipe",
    "run_recipe",
    "export_script",
    "list_workflow_blocks",
    "get_block_details",
    "remember",
    "recall",
    "get_events",
    "search_events",
    "watch_for",
    "schedule_job",
    "get_digest",
    "think",
]


def build_registry() -> ToolRegistry:
    """A registry holding every tool named in TOOL_NAMES, in that order."""
    reg = ToolRegistry()
    for family in (inference, pipelines, cameras, rules, clips, recipes, discovery, memory, event_tools, search_tools,
                   watches, jobs, digest, reasoning):
        family.register(reg)
    missing = set(TOOL_NAMES) ^ set(reg.names)
    if missing:
        raise RuntimeError(f"tool set differs from TOOL_NAMES: {sorted(missing)}")
    return reg
