"""A recipe's content: replayable steps with `{"$param": NAME}` holes, parameter defaults, and its track record."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from bot.objects.pipeline import PipelineSpec
from bot.objects.refusal import field_name

PARAM = "$param"
REPLAYABLE = ("start_pipeline",)  # other changes a turn made are named when saving, not replayed
# start_pipeline arguments that differ per use → the parameter a user sets (`source=cam2 fps=5`); by their one name
START_PARAMS = {"source": "source", "name": "name", "model": "model", "line": "line", "anchor": "anchor",
                "zone": "zone", "fps": "fps"}
SPECS = {"start_pipeline": PipelineSpec}  # each replayable step's one model: its arguments by their one names


def canonical(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A step's arguments by their one names (a recipe saved when the tool said `video_reference` reads `source`)."""
    spec = SPECS.get(tool)
    return {field_name(spec, k): v for k, v in tool_input.items()} if spec is not None else dict(tool_input)
THRESHOLDS = ("confidence", "iou_threshold")  # lifted out of an inline workflow spec's steps
NUMERIC = {"fps", "confidence", "iou_threshold"}


def _free(base: str, params: dict[str, Any]) -> str:
    """`source`, then `source_2` for a second pipeline's source."""
    name, n = base, 2
    while name in params:
        name, n = f"{base}_{n}", n + 1
    return name


def _lift(base: str, value: Any, params: dict[str, Any]) -> dict[str, str]:
    key = _free(base, params)
    params[key] = value
    return {PARAM: key}


def _lift_thresholds(spec: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    for step in spec.get("steps") or []:
        for key in THRESHOLDS:
            if isinstance(step, dict) and isinstance(step.get(key), (int, float)) and not isinstance(step[key], bool):
                step[key] = _lift(key, step[key], params)
    return spec


def parameterize(calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Steps with holes for the values that differ per use, and those values as defaults.

    Only successful REPLAYABLE calls become steps; their START_PARAMS arguments, workflow `parameters` and spec
    thresholds become `{"$param": NAME}` holes.
    """
    steps: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    for call in calls:
        if call["tool"] not in REPLAYABLE or call.get("is_error"):
            continue
        inp = canonical(call["tool"], copy.deepcopy(call["input"]))
        for arg, base in START_PARAMS.items():
            if inp.get(arg) is not None:
                inp[arg] = _lift(base, inp[arg], params)
        if isinstance(inp.get("parameters"), dict):
            inp["parameters"] = {k: _lift(k, v, params) for k, v in inp["parameters"].items()}
        if isinstance(inp.get("workflow_spec"), dict):
            inp["workflow_spec"] = _lift_thresholds(inp["workflow_spec"], params)
        steps.append({"tool": call["tool"], "input": inp})
    return steps, params


def hole(value: Any) -> str | None:
    """The parameter a `{"$param": NAME}` hole stands for, or None for a fixed value."""
    return value[PARAM] if isinstance(value, dict) and set(value) == {PARAM} else None


def substitute(value: Any, values: dict[str, Any]) -> Any:
    """The value with every hole filled; a None value drops the argument (the tool's default applies)."""
    if isinstance(value, dict):
        if set(value) == {PARAM}:
            return values.get(value[PARAM])
        return {k: v for k, raw in value.items() if (v := substitute(raw, values)) is not None}
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    return value


def coerce(key: str, raw: str, default: Any) -> Any:
    """A `key=value` typed like its default: numbers stay numbers; `none` clears an optional one."""
    if raw.strip().lower() in ("none", "off", ""):
        return None
    number_default = isinstance(default, (int, float)) and not isinstance(default, bool)
    numeric = key.rstrip("_0123456789") in NUMERIC or number_default
    if not numeric:
        return raw
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{key}= takes a number, not {raw!r}.") from None
    if not number > 0:
        raise ValueError(f"{key}= must be above 0, not {raw!r}.")
    return number


def new_recipe(name: str, description: str, steps: list[dict[str, Any]], params: dict[str, Any], *,
               created_by: str, session: str, answer: str, now: datetime) -> dict[str, Any]:
    return {
        "name": name, "description": description, "version": 1, "steps": steps, "parameters": params,
        "metadata": {
            "created_by": created_by, "created_at": now.isoformat(timespec="seconds"), "session": session,
            "answer": answer, "successes": 0, "failures": 0, "step_failures": {}, "last_used": None,
            "last_success": None, "last_failure": None, "invalid": None,
        },
    }


def record_run(recipe: dict[str, Any], now: datetime, failed_step: int | None = None, error: str = "") -> None:
    """Count one replay: a success, or a failure at step `failed_step` (0-based) with its line."""
    meta = recipe["metadata"]
    stamp = now.isoformat(timespec="seconds")
    meta["last_used"] = stamp
    if failed_step is None:
        meta["successes"] = int(meta.get("successes") or 0) + 1
        meta["last_success"] = stamp
        return
    meta["failures"] = int(meta.get("failures") or 0) + 1
    per_step = meta.setdefault("step_failures", {})
    per_step[str(failed_step)] = int(per_step.get(str(failed_step)) or 0) + 1
    meta["last_failure"] = {"time": stamp, "step": failed_step + 1, "error": error}
