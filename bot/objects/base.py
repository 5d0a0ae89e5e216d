"""What every object model shares: unknown fields refused, frozen, and numbers that are numbers (a JSON `true` is no
fps, and `-0` is 0), whichever door the value came through."""

from __future__ import annotations

import math
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

NUMBERS = (int, float)
MAX_DEPTH = 20  # nesting of a free-form value (workflow inputs, an inline spec): a hand-made one has a few levels


def _numeric(annotation: Any) -> bool:
    """Whether a field holds a number (also `float | None`, `Annotated[float, …]`)."""
    if annotation in NUMBERS:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return _numeric(typing.get_args(annotation)[0])
    return any(_numeric(a) for a in typing.get_args(annotation) if a is not type(None))


def depth_and_size(value: Any, limit: int = 100_000) -> tuple[int, int]:
    """How deep `value` nests and how many items it holds (stops counting past `limit`), without recursion."""
    deepest, count, stack = 0, 0, [(value, 1)]
    while stack and count <= limit:
        item, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()] + [(k, depth + 1) for k in item]
        elif isinstance(item, (list, tuple)):
            stack += [(v, depth + 1) for v in item]
    return deepest, count


def check_free_form(value: Any, what: str, max_items: int) -> Any:
    """ValueError for a free-form value nested deeper than MAX_DEPTH or holding more than `max_items` items."""
    if value is None:
        return value
    depth, count = depth_and_size(value, max_items)
    if depth > MAX_DEPTH or count > max_items:
        raise ValueError(f"is at most {MAX_DEPTH} levels deep and {max_items} items ({what})")
    return value


class Spec(BaseModel):
    """Base of the objects' models (bot/objects/)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _plain_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and _numeric(field.annotation):
            if isinstance(value, bool):
                raise ValueError(f"takes a number, not {str(value).lower()}")
            if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
                return 0.0
            if isinstance(value, str) and value.strip() in ("-0", "-0.0"):
                return "0"
        return value
