"""Request bodies and query strings of the REST API: pydantic models, so the checks and /openapi.json are one source."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.monitoring.watch import MAX_SECONDS, MIN_SECONDS
from bot.pipelines.request import MAX_FPS, MIN_HEIGHT, START_OPTIONS

_NAME = r"^[\w][\w.-]{0,63}$"  # a pipeline name as /vision start name= takes it
_TEXT = r"^[^\x00-\x1f]*$"  # one line: no control characters
WATCH_CONDITIONS = "appears [CLASS] | count CLASS>N | count CLASS<N | line | zone SECONDS | absent CLASS SECONDS"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartPipeline(_Body):
    """POST /api/pipelines: what `/vision start` takes, as fields."""

    source: str = Field(min_length=1, max_length=2000, pattern=_TEXT,
                        description="camera name from CAMERAS.md, rtsp/http(s) URL, webcam index or video file path")
    model: str | None = Field(None, max_length=200, pattern=_TEXT, description="model id (default builtin/people)")
    workflow: str | None = Field(None, max_length=200, pattern=_TEXT, description="WORKSPACE/WORKFLOW_ID")
    fps: float | None = Field(None, gt=0, le=MAX_FPS)  # the one start's bound, in the schema too
    name: str | None = Field(None, pattern=_NAME)
    line: str | None = Field(None, max_length=200, pattern=_TEXT, description="X1,Y1,X2,Y2 or 'middle'")
    anchor: str | None = Field(None, max_length=20, pattern=_TEXT,
                               description="with line: the box point that counts, feet / centre / top")
    zone: str | None = Field(None, max_length=2000, pattern=_TEXT, description="X1,Y1,X2,Y2,X3,Y3,... or a zone name")
    confidence: float | None = Field(None, ge=0, le=1, description=START_OPTIONS["confidence"][1])
    min_height: int | None = Field(None, ge=MIN_HEIGHT[0], le=MIN_HEIGHT[1], description=START_OPTIONS["min_height"][1])

    def options(self) -> dict[str, str]:
        """The /vision start options (strings, as the command line gives them)."""
        fields = self.model_dump(exclude={"source"}, exclude_none=True)
        return {k: f"{v:g}" if isinstance(v, float) else str(v) for k, v in fields.items()}


class AddRule(_Body):
    """POST /api/rules: `/vision rule CAMERA RULE [cooldown=S]`."""

    camera: str = Field(min_length=1, max_length=64, pattern=_TEXT, description="camera or pipeline name, '*' = all")
    rule: str = Field(min_length=1, max_length=200, pattern=_TEXT,
                      description="line | appears [CLASS] | count CLASS>N | zone SECONDS | near CLASS OTHER [GAP] | "
                      "then CAMERA2 [CLASS] [SECONDS]")
    cooldown_seconds: float | None = Field(None, ge=0, le=86400 * 7)


class AddWatch(_Body):
    """POST /api/watches: `/vision watch CAMERA CONDITION [for …] [confirm]`."""

    camera: str = Field(min_length=1, max_length=64, pattern=_TEXT, description="camera or pipeline name")
    condition: str = Field(min_length=1, max_length=200, pattern=_TEXT, description=WATCH_CONDITIONS)
    for_seconds: float | None = Field(None, ge=MIN_SECONDS, le=MAX_SECONDS, description="how long (default 7200)")
    confirm: bool = Field(False, description="the model checks the frame before it tells")
    about: str = Field("", max_length=200, pattern=_TEXT, description="what it is for, in words")


class SetRoute(_Body):
    """PUT /api/routes: `/vision route CHANNEL [camera=NAME]`."""

    channel: str = Field(min_length=1, max_length=80, pattern=r"^\S+$", description="Slack channel id or #name")
    camera: str | None = Field(None, min_length=1, max_length=64, pattern=_TEXT)


class _Query(BaseModel):
    model_config = ConfigDict(extra="ignore")  # a cache-buster or tracking parameter is no error


class EventsQuery(_Query):
    """GET /api/events query string."""

    since: str | None = Field(None, max_length=64, description="HH:MM today, an ISO time, or seconds ago")
    camera: str | None = Field(None, max_length=64)
    type: str | None = Field(None, max_length=64, description="event_type, e.g. line_crossed, count_over, health")
    limit: int = Field(100, ge=1, le=1000)


class RuleQuery(_Query):
    """DELETE /api/rules query string."""

    camera: str = Field(min_length=1, max_length=64)
    id: str = Field(min_length=1, max_length=200, description="the rule id from GET /api/rules")


class CameraQuery(_Query):
    camera: str | None = Field(None, min_length=1, max_length=64)


BODIES: dict[str, type[BaseModel]] = {"StartPipeline": StartPipeline, "AddRule": AddRule, "SetRoute": SetRoute,
                                      "AddWatch": AddWatch}
QUERIES: dict[str, type[BaseModel]] = {"EventsQuery": EventsQuery, "RuleQuery": RuleQuery, "CameraQuery": CameraQuery}
