"""The one table of what members create: each operation's model, what it changes, its tool text, and the doors that
offer it. Every door adapts this table: the tool registry (and so MCP and recipe replay) takes its argument model and
description from here, the REST API its bodies and OpenAPI schemas, `/vision` parses its words into the same model;
so a name, a default or a bound is declared once and holds at every door, with the same refusal wording
(bot/objects/refusal.py). tests/bot/objects/test_doors.py walks every operation through every door it lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from bot.objects.caps import Kind
from bot.objects.job import JobSpec
from bot.objects.note import NoteSpec
from bot.objects.pipeline import PipelineSpec
from bot.objects.recipe import RecipeRun, RecipeSpec
from bot.objects.route import RouteSpec
from bot.objects.rule import RuleSpec
from bot.objects.search import EventSearchSpec
from bot.objects.watch import WatchSpec
from bot.rights import CONTROLLED, MEMORY, RECIPES

Door = str  # "slash" (Slack and the terminal), "tool" (the model; MCP offers the same), "rest", "replay"


@dataclass(frozen=True)
class Operation:
    """One way of creating (or using) a member's object, or of reading what happened, as every door offers it."""

    tool: str  # the tool's name (the model's and MCP's); also this table's key
    kind: Kind | None  # None: it creates nothing (a search)
    spec: type[BaseModel]
    changes: str | None  # what it changes, for the allowlists and read-only MCP (bot/rights.py); None: it reads
    summary: str  # the tool's description
    slash: str | None = None  # the `/vision` words it is typed as
    rest: str | None = None  # "METHOD /path" of the REST API
    doors: tuple[Door, ...] = ("slash", "tool", "rest")


OPERATIONS: dict[str, Operation] = {op.tool: op for op in (
    Operation("start_pipeline", "pipeline", PipelineSpec, CONTROLLED,
              "Start continuous video processing on a camera or video source. Runs a workflow on every frame: a "
              "model (default builtin/people; add line= to count crossings, zone= to time dwell), a saved Roboflow "
              "workflow (workflow=WORKSPACE/ID), or an inline workflow_spec (validated before deploy).",
              slash="start SOURCE", rest="POST /api/pipelines", doors=("slash", "tool", "rest", "replay")),
    Operation("set_alert_rule", "rule", RuleSpec, CONTROLLED,
              "Set a standing alert rule (tier 1, checked on every result of the camera's pipeline, no model "
              "involved) when the user asks to be alerted: counts, crossings, dwell, two classes near each other, or "
              "one camera then another. Says the rule's id and how to remove it; `/vision rules` lists them.",
              slash="rule CAMERA RULE", rest="POST /api/rules"),
    Operation("watch_for", "watch", WatchSpec, CONTROLLED,
              "Watch a camera for something once ('tell me when a truck reaches the dock in the next 2 hours', 'let "
              "me know when the last person leaves'): the asker is told here when it happens or when the watch "
              "expires, and the watch ends. Needs a running pipeline on the camera.",
              slash="watch CAMERA CONDITION", rest="POST /api/watches"),
    Operation("schedule_job", "job", JobSpec, CONTROLLED,
              "Schedule a recurring job when the user asks for one: a daily written summary (at HH:MM), a camera's "
              "snapshot, a digest of what happened, or a heartbeat check. It posts where it was asked (or `to`, a "
              "channel the asker may post to). `/vision jobs` lists them, `/vision unschedule NAME` removes one.",
              slash="schedule ACTION WHEN", rest="POST /api/jobs"),
    Operation("save_recipe", "recipe", RecipeSpec, RECIPES,
              "Save the last setup of this conversation that worked (the pipelines started in the last turn that "
              "changed something) as a named recipe, when the user asks to save it.",
              slash="recipe save NAME", doors=("slash", "tool")),
    Operation("run_recipe", "recipe", RecipeRun, CONTROLLED,
              "Replay a saved recipe (no composing): starts its pipelines with the given parameter overrides and "
              "checks they deliver results. Prefer it to composing the same setup again.",
              slash="recipe run NAME", doors=("slash", "tool")),
    Operation("remember", "note", NoteSpec, MEMORY,
              "Store an observation, fact or user preference in persistent memory. Use it for significant events, "
              "patterns, or anything the user asks you to remember.", doors=("tool",)),
    Operation("set_route", "route", RouteSpec, CONTROLLED,
              "Send a camera's alerts (or every camera's) to a Slack channel.",
              slash="route CHANNEL", rest="PUT /api/routes", doors=("slash", "rest")),
    Operation("search_events", None, EventSearchSpec, None,
              "Search the past by words and meaning ('when did the white van come in?', 'someone walking left', "
              "'a delivery'): events of the event log ranked by what was seen (class, colour, size, place, "
              "direction, the model's words about it), within a time and a camera if given. Answers with the "
              "moments (time, camera, what, link) and shows the asker the best frames: say what they show, do not "
              "list every row again.",
              slash="search WORDS", rest="GET /api/events/search"),
)}


def operation(tool: str) -> Operation:
    return OPERATIONS[tool]
