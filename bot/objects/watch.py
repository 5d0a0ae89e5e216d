"""A one-shot watch as a member asks for one (`/vision watch`, watch_for, POST /api/watches): its bounds once."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasChoices, Field, model_validator

from bot.objects.base import Spec
from bot.objects.rule import CameraRef
from bot.objects.text import Text200

DEFAULT_SECONDS = 2 * 3600.0
MIN_SECONDS, MAX_SECONDS = 5.0, 24 * 3600.0
CONDITIONS = "appears [CLASS] | count CLASS>N | count CLASS<N | line | zone SECONDS | absent CLASS SECONDS"


class WatchSpec(Spec):
    """What a watch asks for: a camera, a condition in `/vision watch` words, how long, confirm, the asker's words.
    `for_minutes` (the tool's old unit) is taken as minutes; `for_seconds` is an alias of `seconds`."""

    REFUSALS: ClassVar[dict[str, str]] = {
        "seconds": f"a watch lasts between {MIN_SECONDS:g} s and {MAX_SECONDS / 3600:g} h, not {{given}} s; ask for a "
                   "shorter or longer time (e.g. `for 2h`)"}

    camera: CameraRef = Field(description="The camera or pipeline name to watch (a pipeline should run on it)")
    condition: Text200 = Field(min_length=1, description=f"What to wait for: {CONDITIONS}. E.g. 'appears "
                                    "truck', 'count person>3', 'count person<1' (nobody left), 'absent person 60' "
                                    "(no person seen for 60 s), 'line' (something crosses the counting line)")
    seconds: float | None = Field(None, ge=MIN_SECONDS, le=MAX_SECONDS,
                                  validation_alias=AliasChoices("seconds", "for_seconds"),
                                  description=f"How long to watch, in seconds (default {DEFAULT_SECONDS:g}; "
                                  f"{MIN_SECONDS:g} s to {MAX_SECONDS / 3600:g} h)", examples=[3600])
    confirm: bool = Field(False, description="Look at the frame with the model before telling (fewer false alarms, "
                          "one model call per sighting, billed to the asker's share)")
    about: Text200 = Field("", description="What the person asked for, in their words ('a truck reaches the "
                                "dock'): shown with the watch and given to the model, as data, with confirm")

    @model_validator(mode="before")
    @classmethod
    def _minutes(cls, data: Any) -> Any:
        if isinstance(data, dict) and "for_minutes" in data:
            data = dict(data)
            minutes = data.pop("for_minutes")
            if minutes is not None and "seconds" not in data and "for_seconds" not in data:
                try:
                    data["seconds"] = float(minutes) * 60
                except (TypeError, ValueError):
                    data["seconds"] = minutes
        return data

    @property
    def lasts(self) -> float:
        return DEFAULT_SECONDS if self.seconds is None else float(self.seconds)
