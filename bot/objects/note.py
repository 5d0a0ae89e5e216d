"""A memory note as the remember tool writes one: bounded, one line, its camera a name."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field

from bot.objects.base import Spec
from bot.objects.text import Name, Text2000

NOTE_MAX = 2000


class NoteSpec(Spec):
    """What remembering asks for (the note keeps its author and audience: bot/objects/owner.py)."""


    content: Text2000 = Field(min_length=1, description="What to remember, in one line")
    category: Literal["observation", "knowledge", "preference"] = Field(
        "observation", description="'observation' goes to today's log; 'knowledge'/'preference' to KNOWLEDGE.md")
    camera: Name | None = Field(None, validation_alias=AliasChoices("camera", "camera_id"),
                                description="Associated camera, for observations")
