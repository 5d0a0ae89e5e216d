"""The OpenAPI 3.1 document of the REST API: paths written here beside the routes, bodies and query strings generated
from the pydantic models the handlers validate with (bot/api/models.py), so the two cannot drift."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from bot.api.models import BODIES, QUERIES, AddJob, AddRule, AddWatch, RunInference, SetRoute, StartPipeline

_OK = {"$ref": "#/components/schemas/Ok"}
_ERR = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1},
       "description": "pipeline id or name"}


def _json(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _OK}}}


def _op(summary: str, ok: str = "200", body: type[BaseModel] | None = None, query: str | None = None,
        path_id: bool = False, jpeg: bool = False, id_of: str = "pipeline id or name",
        media: str | None = None, path_name: bool = False) -> dict[str, Any]:
    media = media or ("image/jpeg" if jpeg else None)
    op: dict[str, Any] = {"summary": summary, "responses": {
        ok: {"description": media, "content": {media: {"schema": {"type": "string", "format": "binary"}}}}
        if media else _json("ok"),
        "400": _ERR, "401": _ERR, "404": _ERR, "503": _ERR}}
    params = [{**_ID, "description": id_of}] if path_id else []
    if path_name:
        params.append({**_ID, "name": "name", "description": "the job's name"})
    if query:
        params += _query_params(QUERIES[query])
    if params:
        op["parameters"] = params
    if body is not None:  # named as its component: the body classes are the objects' models (bot/objects)
        name = next(k for k, v in BODIES.items() if v is body)
        op["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{name}"}}}}
    return op


def _inference_op() -> dict[str, Any]:
    """POST /api/inference: the run_inference arguments as JSON, or the image itself with them in the query string."""
    op = _op("Run a model or workflow on one image (the run_inference tool); answers the summary and the boxes "
             "(`detections`, `counts`, `image_size`; `frame`, base64 JPEG, with include_frame)", body=RunInference)
    op["requestBody"]["content"]["image/*"] = {"schema": {"type": "string", "format": "binary"}}
    op["parameters"] = [p for p in _query_params(RunInference)
                        if p["name"] != "image" and p["schema"].get("type") != "object"]  # a spec goes as JSON
    for p in op["parameters"]:
        p["description"] = p.get("description", "") + " (with an image body)"
    return op


def _query_params(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema()
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema["properties"].items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        desc = prop.pop("description", None)
        if "anyOf" in prop:  # `str | None` in a query string is just an optional string
            prop = next(p for p in prop["anyOf"] if p.get("type") != "null")
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if desc:
            param["description"] = desc
        out.append(param)
    return out


def _components() -> dict[str, Any]:
    schemas: dict[str, Any] = {
        "Ok": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
        "Error": {"type": "object", "required": ["status", "error"],
                  "properties": {"status": {"const": "error"}, "error": {"type": "string"}}},
    }
    for name, model in BODIES.items():
        schemas[name] = model.model_json_schema(ref_template="#/components/schemas/{model}")
    return {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}


@cache
def document() -> dict[str, Any]:
    """The whole document (built once)."""
    paths: dict[str, Any] = {
        "/api/health": {"get": _op("Pipelines running; answers once the token is right")},
        "/api/cameras": {"get": _op("Cameras from CAMERAS.md (credentials masked) and named zones")},
        "/api/cameras/readiness": {"get": _op("Which cameras can count (as /vision cameras): every camera of "
                                              "CAMERAS.md and every pipeline with its resolution, fps asked and "
                                              "delivered, people's height, light, motion, last frame age, and why "
                                              "not and what to change; ?camera=NAME for one")},
        "/api/pipelines": {"get": _op("Pipelines and their status"),
                           "post": _op("Start a pipeline (as /vision start): checked, then answered at once with "
                                       "the pipeline in status `starting` (`follow`, a Location header); the "
                                       "detector loads and the source opens in the background, and "
                                       "GET /api/pipelines/{id} shows it become `running` or `error` with the reason",
                                       "201", StartPipeline)},
        "/api/pipelines/{id}": {"get": _op("One pipeline's status", path_id=True)},
        "/api/pipelines/{id}/frame": {"get": _op("The latest annotated frame", path_id=True, jpeg=True)},
        "/api/alerts/{id}/frame": {"get": _op("The frame an alert was sent with (a webhook's frame_url)",
                                              path_id=True, jpeg=True, id_of="the webhook's alert_id")},
        "/api/clips/{id}": {"get": _op("An alert's MP4 clip (a webhook's clip_url)", path_id=True,
                                       media="video/mp4", id_of="the clip id (the last part of clip_url)")},
        "/api/rules": {"get": _op("Tier-1 alert rules", query="CameraQuery"),
                       "post": _op("Add a rule (as /vision rule)", "201", AddRule),
                       "delete": _op("Remove a rule (as /vision unrule)", query="RuleQuery")},
        "/api/routes": {"get": _op("Alert routes (camera -> Slack channel)"),
                        "put": _op("Route a camera's alerts (as /vision route)", body=SetRoute),
                        "delete": _op("Remove a route", query="CameraQuery")},
        "/api/events": {"get": _op("Alerts and tier-1 events from the event log", query="EventsQuery")},
        "/api/events/search": {"get": _op("Events found by words and meaning (the search_events tool): the moments, "
                                          "best first, each with what was seen and a link to its frame or clip",
                                          query="EventSearchQuery")},
        "/api/events/{id}/picture": {"get": _op("An event's small picture (the crop of what it saw, or its frame)",
                                                path_id=True, jpeg=True, id_of="the event id")},
        "/api/watches": {"get": _op("One-shot watches that run (`watches`) and those that ended with their "
                                    "pipeline (`ended`)"),
                         "post": _op("Watch a camera once (as /vision watch); `answers_to` says where the "
                                     "answer will go (the webhook, Slack, GET /api/events)", "201", AddWatch)},
        "/api/watches/{id}": {"delete": _op("Cancel a watch (as /vision unwatch)", path_id=True,
                                            id_of="the watch id")},
        "/api/jobs": {"get": _op("Scheduled jobs and their next run"),
                      "post": _op("Schedule a job (as /vision schedule)", "201", AddJob)},
        "/api/jobs/{name}": {"delete": _op("Remove a scheduled job (as /vision unschedule)", path_name=True)},
        "/api/inference": {"post": _inference_op()},
    }
    for param in paths["/api/events/search"]["get"]["parameters"]:
        if param["name"] == "query":  # the words are `q` in a query string (`query` and `words` work too)
            param["name"] = "q"
    for verb in ("stop", "pause", "resume"):
        paths[f"/api/pipelines/{{id}}/{verb}"] = {"post": _op(f"{verb.capitalize()} a pipeline", path_id=True)}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Vision Agent REST API", "version": "1",
                 "description": "Every /api path needs `Authorization: Bearer <VISION_AGENT_API_TOKEN>`. "
                                "Errors are {\"status\": \"error\", \"error\": \"...\"}."},
        "security": [{"bearer": []}],
        "paths": paths,
        "components": _components(),
    }
