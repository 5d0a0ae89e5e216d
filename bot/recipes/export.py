"""A recipe → a standalone Python script (script_template.py filled in): the spec embedded, parameters as options."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.backends.counting import parse_anchor
from bot.backends.workflows import detection_workflow, is_builtin
from bot.pipelines.counting_line import parse_line
from bot.pipelines.zones import resolve_zone_sized
from bot.recipes.model import substitute

TEMPLATE = Path(__file__).with_name("script_template.py")
BLOCK_START, BLOCK_END = "# --- RECIPE (filled in by the export) ---\n", "# --- END RECIPE ---\n"
_LINE_STANDIN = [[0, 0], [0, 1]]  # `middle` is placed by the script once it has read a frame of its source


def _spec(values: dict[str, Any], named_zones: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    """(the spec to embed, or None for a saved Roboflow workflow; the zone as points text, or '')."""
    if values.get("workflow_id"):
        return None, ""
    if values.get("workflow_spec"):
        return values["workflow_spec"], ""
    model, line, zone = values.get("model") or "builtin/people", values.get("line"), values.get("zone")
    zone_points, zone_size = resolve_zone_sized(zone, named_zones) if zone else (None, None)
    line_points = (parse_line(line) or _LINE_STANDIN) if line else None
    zone_text = ",".join(f"{x},{y}" for x, y in zone_points) if zone_points else ""
    if zone_text and zone_size:  # moved onto the source's frames by the script, as the bot does (`placed`)
        zone_text += f"@{zone_size[0]}x{zone_size[1]}"
    anchor = parse_anchor(values["anchor"]) if values.get("anchor") and line_points else None
    return detection_workflow(model, line=line_points, zone=zone_points, anchor=anchor), zone_text


def _defaults(recipe: dict[str, Any], values: dict[str, Any], zone_text: str) -> dict[str, Any]:
    source = values.get("source")
    cameras = recipe["metadata"].get("camera_params") or []
    if any(recipe["parameters"].get(p) == source for p in cameras):
        # A camera name means nothing outside the bot, and its URL may hold a password: --source is required.
        source = None
    confidence = recipe["parameters"].get("confidence")
    return {"source": source, "fps": values.get("fps"), "line": values.get("line"), "zone": zone_text or None,
            "confidence": confidence}


def script_for(recipe: dict[str, Any], named_zones: dict[str, str], now: datetime | None = None) -> str:
    """The script's text; ValueError (one line) when the recipe does not start exactly one pipeline."""
    starts = [s for s in recipe["steps"] if s["tool"] == "start_pipeline"]
    if len(starts) != 1:
        raise ValueError(f"recipe {recipe['name']} starts {len(starts)} pipelines; an export runs exactly one.")
    values = substitute(starts[0]["input"], recipe["parameters"])
    spec, zone_text = _spec(values, named_zones)
    model = values.get("model") or ("" if spec is None or values.get("workflow_spec") else "builtin/people")
    workflow = {k: values[k] for k in ("workspace_name", "workflow_id") if values.get(k)}
    block = "\n".join([
        f"RECIPE = {recipe['name']!r}",
        f"DESCRIPTION = {str(recipe.get('description') or '')!r}",
        f"SPEC: dict[str, Any] | None = json.loads({json.dumps(spec)!r})",
        f"WORKFLOW: dict[str, str] = {workflow!r}",
        f"DEFAULTS: dict[str, Any] = json.loads({json.dumps(_defaults(recipe, values, zone_text))!r})",
        f"BUILTIN_MODEL = {(model if is_builtin(model) or _uses_builtin(spec) else '')!r}",
        "",
    ])
    text = TEMPLATE.read_text(encoding="utf-8")
    head, _, rest = text.partition(BLOCK_START)
    _, _, tail = rest.partition(BLOCK_END)
    stamp = (now or datetime.now()).isoformat(timespec="seconds")
    banner = f"#!/usr/bin/env python3\n# Recipe {recipe['name']!r} exported by Vision Agent on {stamp}.\n"
    return banner + head + BLOCK_START + block + BLOCK_END + tail


def _uses_builtin(spec: dict[str, Any] | None) -> bool:
    steps = (spec or {}).get("steps") or []
    return any(str(s.get("type", "")).startswith("vision_agent/") for s in steps)
