"""Request bodies and query strings of the REST API: pydantic models, so the checks and /openapi.json are one source."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.objects.job import JobSpec
from bot.objects.pipeline import PipelineSpec
from bot.objects.route import RouteSpec
from bot.objects.rule import RuleSpec
from bot.objects.search import EventSearchSpec
from bot.objects.watch import CONDITIONS, WatchSpec
from tools.inference import RunInferenceArgs

WATCH_CONDITIONS = CONDITIONS

# The bodies are the objects' own models (bot/objects/table.py): the REST API, the tools, MCP and `/vision` validate
# with the same classes, so a bound holds at every door and /openapi.json shows it. Old field names stay accepted as
# aliases (documented in README.md): `cooldown_seconds` for `cooldown`, `for_seconds` for `seconds`.
StartPipeline = PipelineSpec
AddRule = RuleSpec
AddWatch = WatchSpec
SetRoute = RouteSpec
AddJob = JobSpec
# GET /api/events/search is the search_events tool: its query string is the search's own model (`q` is `query`).
EventSearchQuery = EventSearchSpec
# POST /api/inference is the model's run_inference tool: its body is the tool's own argument model.
RunInference = RunInferenceArgs


class _Query(BaseModel):
    model_config = ConfigDict(extra="ignore")  # a cache-buster or tracking parameter is no error


class EventsQuery(_Query):
    """GET /api/events query string."""

    since: str | None = Field(None, max_length=64, description="HH:MM today, an ISO time, or seconds ago")
    camera: str | None = Field(None, max_length=64)
    type: str | None = Field(None, max_length=64, description="event_type, e.g. line_crossed, count_over, health")
    limit: int = Field(100, ge=1, le=1000)
    after: str | None = Field(None, pattern=r"^\d{1,18}$", description=(
        "an event id (the `next` of the last page, or the `id` of the last event seen): the events after it, oldest "
        "first, with no gaps or repeats between pages"))


class RuleQuery(_Query):
    """DELETE /api/rules query string."""

    camera: str = Field(min_length=1, max_length=64)
    id: str = Field(min_length=1, max_length=200, description="the rule id from GET /api/rules")


class CameraQuery(_Query):
    camera: str | None = Field(None, min_length=1, max_length=64)


BODIES: dict[str, type[BaseModel]] = {"StartPipeline": StartPipeline, "AddRule": AddRule, "SetRoute": SetRoute,
                                      "AddWatch": AddWatch, "AddJob": AddJob, "RunInference": RunInference}
QUERIES: dict[str, type[BaseModel]] = {"EventsQuery": EventsQuery, "RuleQuery": RuleQuery, "CameraQuery": CameraQuery,
                                        "EventSearchQuery": EventSearchQuery}
