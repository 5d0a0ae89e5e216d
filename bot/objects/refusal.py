"""One wording for a refused object, whichever door it came through: a pydantic ValidationError as one line.

Slash and CLI words, the model's tool calls (and so MCP), REST bodies and recipe steps all validate with the same
object model (bot/objects/), and all say what was wrong with these words: `fps must be above 0 and at most 120, not
500.` The field is named by its one name, also when the caller used an old alias (`max_fps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import annotated_types as at
from pydantic import AliasChoices, BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class Refused(ValueError):
    """An object a door was given does not fit its model; str() is the one line every door shows."""


def parse(model: type[M], data: Mapping[str, Any]) -> M:
    """`data` as `model`, or Refused with the one line (every problem, `; `-joined)."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise Refused(explain(exc, model)) from None


def field_name(model: type[BaseModel], given: str) -> str:
    """The field's one name for what a caller called it (an old alias such as `video_reference` → `source`)."""
    if given in model.model_fields:
        return given
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        if alias == given or (isinstance(alias, AliasChoices) and given in alias.choices):
            return name
    return given


def _range(model: type[BaseModel], name: str) -> str:
    """'above 0 and at most 120' from the field's bounds."""
    info = model.model_fields.get(name)
    parts = []
    for m in info.metadata if info is not None else []:
        if isinstance(m, at.Gt):
            parts.append(f"above {m.gt:g}")
        elif isinstance(m, at.Ge):
            parts.append(f"at least {m.ge:g}")
        elif isinstance(m, at.Lt):
            parts.append(f"below {m.lt:g}")
        elif isinstance(m, at.Le):
            parts.append(f"at most {m.le:g}")
    return " and ".join(parts) or "in range"


def _example(model: type[BaseModel], name: str) -> str:
    info = model.model_fields.get(name)
    examples = info.examples if info is not None else None
    return f" (e.g. {examples[0]})" if examples else ""


def _shown(value: Any) -> str:
    """The value given, the same whichever door it came through: 500 from JSON and '500' typed both show as 500."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.15g}" if isinstance(value, float) else str(value)
    if isinstance(value, str) and value.isascii():
        try:
            return f"{float(value):.15g}" if value.strip() else repr(value)
        except ValueError:
            pass
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…'"


NUMBER_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number", "int_parsing",
                 "int_from_float", "int_type", "float_parsing", "float_type")


def _one(model: type[BaseModel], err: Mapping[str, Any]) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    name = field_name(model, loc[0]) if loc else ""
    kind, given = err.get("type", ""), err.get("input")
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    said = getattr(model, "REFUSALS", {}).get(name)  # a model's own words for a bound that needs advice
    if said and kind in NUMBER_ERRORS:
        return said.replace("{given}", _shown(given)) if "{given}" in said else f"{said}, not {_shown(given)}"
    if kind == "value_error":
        return f"{name} {msg}" if name else msg
    if kind == "missing":
        return f"{name} is required"
    if kind == "string_too_short":
        return f"{name} cannot be empty"
    if kind == "extra_forbidden":
        takes = ", ".join(model.model_fields)
        return f"unknown option {name!r}; it takes {takes}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"):
        return f"{name} must be {_range(model, name)}{_example(model, name)}, not {_shown(given)}"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"{name} takes a whole number{_example(model, name)}, not {_shown(given)}"
    if kind in ("float_parsing", "float_type"):
        return f"{name} takes a number{_example(model, name)}, not {_shown(given)}"
    if kind in ("bool_parsing", "bool_type"):
        return f"{name} is true or false, not {_shown(given)}"
    if kind == "literal_error":
        return f"{name} is {err.get('ctx', {}).get('expected', 'one of the listed values')}, not {_shown(given)}"
    if kind in ("string_type", "dict_type", "list_type", "model_type"):
        return f"{name} {msg[0].lower() + msg[1:] if msg else 'has the wrong type'}"
    return f"{name}: {msg}" if name else msg


def explain(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every problem of `exc` in one line, in the words every door uses."""
    lines = list(dict.fromkeys(_one(model, e) for e in exc.errors()))
    text = "; ".join(line.rstrip(".") for line in lines)
    return text + "."
