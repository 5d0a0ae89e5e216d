"""How many objects of a kind may exist, per person and in total: one rule, every kind (settings `caps`, `pipelines`).

A member must not take every place, or fill the machine: each kind has a cap per person and a cap in total. The
operator's objects count towards the total and are held by it (it guards the machine for everyone), never by the
per-person cap. Objects that already exist (restored at start-up, loaded from a store) are never dropped by a lower
cap: the cap is checked when one is created.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from bot.config import Settings

Kind = Literal["pipeline", "rule", "watch", "job", "recipe", "route", "note"]
# How each kind is named in a refusal: (many, how they are, where to see them, how to remove one).
WORDS: dict[str, tuple[str, str, str, str]] = {
    "pipeline": ("pipelines", "are running", "`/vision list`", "stop one"),
    "rule": ("rules", "are set", "`/vision rules`", "`/vision unrule` one"),
    "watch": ("watches", "run", "`/vision watches`", "`/vision unwatch` one"),
    "job": ("scheduled jobs", "are set", "`/vision jobs`", "`/vision unschedule` one"),
    "recipe": ("recipes", "are saved", "`/vision recipes`", "`/vision recipe delete` one"),
    "route": ("alert routes", "are set", "`/vision status`", "remove one"),
    "note": ("memory notes", "were written today", "`recall`", "wait until tomorrow"),
}


def limits(settings: Settings, kind: Kind) -> tuple[int, int]:
    """(per person, total) for a kind; 0 = no limit."""
    if kind == "pipeline":
        return settings.pipelines.max_per_user, settings.pipelines.max_total
    cap = getattr(settings.caps, kind)
    return cap.per_person, cap.total


def setting_of(kind: Kind, per_person: bool) -> str:
    if kind == "pipeline":
        return "pipelines.max_per_user" if per_person else "pipelines.max_total"
    return f"caps.{kind}.{'per_person' if per_person else 'total'}"


def cap_refusal(settings: Settings, kind: Kind, owners: Iterable[str | None], owner: str | None) -> str | None:
    """One line if `owner` (a Slack user id; None: the operator) may not create one more `kind` beside the ones
    that exist (their owners), else None."""
    per_person, total = limits(settings, kind)
    many, are, listing, remove = WORDS[kind]
    existing = list(owners)
    if total and len(existing) >= total:
        return (f"{len(existing)} {many} {are}, the most this bot keeps at once ({setting_of(kind, False)} = "
                f"{total}): {remove} first ({listing} shows them).")
    mine = sum(1 for o in existing if o == owner)
    if owner is not None and per_person and mine >= per_person:
        return (f"you already have {mine} {many}, the most one person may ({setting_of(kind, True)} = "
                f"{per_person}): {remove} of yours first ({listing} shows them).")
    return None
