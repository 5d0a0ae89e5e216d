"""A recipe as a member saves one (`/vision recipe save`, save_recipe): its name and its one-line description."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from bot.objects.base import Spec
from bot.objects.text import Text200
from workspace.recipes import NAME

DESCRIPTION_MAX = 200


def _recipe_name(value: Any) -> str:
    clean = value.strip().lower() if isinstance(value, str) else ""
    if not NAME.match(clean):
        raise ValueError(f"is 1-48 lower-case letters, digits, - or _ (e.g. door-count), not {str(value)[:60]!r}")
    return clean


RecipeName = Annotated[str, AfterValidator(_recipe_name), Field(json_schema_extra={"pattern": NAME.pattern})]


class RecipeSpec(Spec):
    """What saving a recipe asks for; its steps come from the conversation's last setup."""


    name: RecipeName = Field(description="Recipe name: lower-case letters, digits, - or _ (e.g. door-count)")
    description: Text200 = Field(
        "", description="One line saying what the setup does, e.g. 'counts people crossing the door line'")


class RecipeRun(Spec):
    """What replaying a recipe asks for: its name and parameter overrides."""


    name: RecipeName = Field(description="A recipe listed under 'Recipes' in the turn context")
    parameters: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict, max_length=50,
        description='Overrides by parameter name, e.g. {"source": "cam2", "fps": 5}')
