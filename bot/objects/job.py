"""A scheduled job as a member asks for one (`/vision schedule`, the schedule_job tool, POST /api/jobs): what it does,
when, and where it posts; bounded so that nothing saved can overflow or flood (bot/objects/when.py)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from bot.objects.base import Spec
from bot.objects.rule import CameraRef
from bot.objects.text import Name, Text60, Text300
from bot.objects.when import EXAMPLE, INTERVAL_RULE, MAX_MINUTES, MIN_MINUTES, check_interval, parse_when

Action = Literal["summary", "snapshot", "heartbeat", "digest"]
ACTIONS: dict[str, str] = {"summary": "daily_summary", "snapshot": "snapshot", "heartbeat": "heartbeat",
                           "digest": "digest"}  # the word people use -> the scheduler's action
WORDS = {v: k for k, v in ACTIONS.items()}
_HHMM = r"^\d{1,2}:\d{2}$"


class JobSpec(Spec):
    """What scheduling a job asks for. `when` is the phrase (`at 18:00`, `every 15 minutes`); `at` and
    `every_minutes` may be given instead. `to` is a channel or a message link (its thread), checked against what the
    asker may post to when the job is created (bot/objects/table.py)."""

    REFUSALS: ClassVar[dict[str, str]] = {
        "every_minutes": f"a job repeats {INTERVAL_RULE}, not every {{given}} minutes; for once a day or less "
                         "often use 'at HH:MM'"}

    action: Action = Field(description="summary (a daily written summary), snapshot (a camera's latest frame), "
                           "heartbeat (the model checks in), digest (what happened since the last run)")
    camera: CameraRef | None = Field(None, description="With snapshot (and optionally digest): the camera or pipeline")
    when: Text60 | None = Field(None, description=f"When it runs: {EXAMPLE}, from every {MIN_MINUTES:g} "
                                     f"minute to every {MAX_MINUTES / 1440:g} days")
    at: str | None = Field(None, pattern=_HHMM, description="A daily time HH:MM (the heartbeat time zone)")
    every_minutes: float | None = Field(None, ge=MIN_MINUTES, le=MAX_MINUTES, description="An interval in minutes",
                                        examples=[60])
    name: Name | None = Field(None, description="The job's name (default: what-camera-when); a name someone else's "
                              "job has is refused")
    to: Text300 | None = Field(None, validation_alias=AliasChoices("to", "channel"),
                                    description="Where it posts: a channel (#ops) or a message link (that thread); "
                                    "default: where it was asked")

    @model_validator(mode="before")
    @classmethod
    def _words(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("action") in WORDS:  # the scheduler's own name for an action
            data = {**data, "action": WORDS[data["action"]]}
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (isinstance(v, str) and not v.strip())}
        return data

    @field_validator("at")
    @classmethod
    def _at(cls, v: str | None) -> str | None:
        if v is None:
            return v
        hh, mm = (int(x) for x in v.split(":"))
        if hh > 23 or mm > 59:
            raise ValueError(f"is a time of day, HH:MM between 00:00 and 23:59, not {v!r}")
        return f"{hh:02d}:{mm:02d}"

    @model_validator(mode="after")
    def _schedule(self) -> JobSpec:
        at, every = self.at, self.every_minutes
        if self.when is not None:
            if at is not None or every is not None:
                raise ValueError("give when= or at=/every_minutes=, not both")
            parsed = parse_when(self.when)
            at, every = parsed.get("at"), parsed.get("every_minutes")
        if (at is None) == (every is None):
            raise ValueError(f"say when the {self.action} runs, {EXAMPLE}")
        if every is not None:
            every = check_interval(float(every))
        if self.action == "summary" and at is None:
            raise ValueError("the summary runs once a day: say `at 18:00`")
        if self.action == "heartbeat" and at is not None:
            raise ValueError("the heartbeat repeats: say `every 15 minutes`")
        if self.action == "snapshot" and not self.camera:
            raise ValueError("say which camera, e.g. `/vision schedule snapshot dock every hour`")
        object.__setattr__(self, "at", at)
        object.__setattr__(self, "every_minutes", every)
        object.__setattr__(self, "when", None)
        return self

    @property
    def slug(self) -> str:
        """'18:00', 'hourly', 'every-15min': the when part of a default job name."""
        if self.at:
            return self.at
        return "hourly" if self.every_minutes == 60 else f"every-{self.every_minutes:g}min"

