"""What a tool call is called where people watch it work: the one label table (Slack task cards, the CLI).

Labels are built from the tool's name and a few of its arguments. Arguments come from the model (untrusted):
only short, named fields are used, never a URL (a camera address may carry a password), each redacted and cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bot.media.redaction import redact
from bot.objects.text import for_people

_MAX_NAME = 40
_MAX_TITLE = 120
_MAX_OUTPUT = 200
_URLISH = re.compile(r"^[a-z][a-z0-9+.-]*://|[/\\@]", re.I)


def _name(args: dict[str, Any], *keys: str) -> str:
    """The first short, name-like argument among keys ('' when none): never a URL or a path."""
    for key in keys:
        value = args.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            text = " ".join(redact(str(value)).split())
            if text and not _URLISH.search(text):
                return text if len(text) <= _MAX_NAME else text[: _MAX_NAME - 1] + "…"
    return ""


def _on(label: str, where: str) -> str:
    return f"{label} on {where}" if where else label


def _start(a: dict[str, Any]) -> str:
    where = _name(a, "pipeline_name", "video_reference")
    if a.get("line"):
        return _on("Counting crossings", where)
    if a.get("zone"):
        return _on("Timing stays in a zone", where)
    return _on("Starting a pipeline", where)


def _inference(a: dict[str, Any]) -> str:
    model = _name(a, "model_id")
    return {"builtin/faces": "Finding faces", "builtin/people": "Counting people"}.get(model, "Looking at the image")


# tool name -> label from its arguments. A tool missing here gets a generic label (`label()`), never its raw id.
LABELS: dict[str, Callable[[dict[str, Any]], str]] = {
    "run_inference": _inference,
    "ask_about_image": lambda a: "Asking a vision model about the image",
    "detect_zero_shot": lambda a: "Looking for " + (", ".join(
        _name({"c": c}, "c") for c in (a.get("class_names") or [])[:3] if isinstance(c, str)) or "objects"),
    "start_pipeline": _start,
    "get_pipeline_results": lambda a: _on("Reading the latest results", _name(a, "pipeline_id")),
    "list_pipelines": lambda a: "Checking the running pipelines",
    "stop_pipeline": lambda a: _on("Stopping the pipeline", _name(a, "pipeline_id")),
    "pause_pipeline": lambda a: _on("Pausing the pipeline", _name(a, "pipeline_id")),
    "resume_pipeline": lambda a: _on("Resuming the pipeline", _name(a, "pipeline_id")),
    "get_events": lambda a: _on("Reading what happened", _name(a, "camera")),
    "search_events": lambda a: _on("Searching the past", _name(a, "camera")),
    "get_digest": lambda a: _on("Summing up what happened", _name(a, "camera")),
    "get_clip_frames": lambda a: "Watching the event clip",
    "recall": lambda a: "Searching memory",
    "remember": lambda a: "Noting this in memory",
    "think": lambda a: "Thinking it through",
    "list_workflow_blocks": lambda a: "Looking up workflow blocks",
    "get_block_details": lambda a: "Reading a block's details",
    "save_recipe": lambda a: _on("Saving the recipe", _name(a, "name")),
    "run_recipe": lambda a: _on("Running the recipe", _name(a, "name")),
    "export_script": lambda a: _on("Exporting a script", _name(a, "name")),
}


def label(name: str, args: dict[str, Any] | None) -> str:
    """A short human label for one tool call ("Starting a pipeline on cam3")."""
    make = LABELS.get(name)
    try:
        text = make(args if isinstance(args, dict) else {}) if make else "Working on it"
    except Exception:  # a label must never cost the turn, whatever the model sent
        text = "Working on it"
    return text[:_MAX_TITLE]


def outcome(text: str, is_error: bool) -> str:
    """The short result shown under a finished step: its first line, redacted and cut."""
    first = next((ln.strip() for ln in redact(for_people(text or "")).splitlines() if ln.strip()), "")
    if not first:
        first = "failed" if is_error else "done"
    return first if len(first) <= _MAX_OUTPUT else first[: _MAX_OUTPUT - 1] + "…"
