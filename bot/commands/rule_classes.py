"""The classes a camera's model produces, so a rule names one of them (`count people>3` on a model that says
`person` would never fire): corrected when it is a plural or a case slip, refused otherwise, naming the classes."""

from __future__ import annotations

from dataclasses import replace

from bot.backends.workflows import BUILTIN_CLASSES
from bot.commands.context import CommandContext
from bot.monitoring.rules import ANY, Rule
from bot.monitoring.wording import class_of
from bot.pipelines.state import PipelineNotFound


def camera_classes(ctx: CommandContext, camera: str) -> tuple[str, set[str], bool]:
    """(where they come from, the classes, whether that is all it can report) for one camera: its builtin model's
    (complete), else what its results showed so far; an empty set when nothing is known yet."""
    if ctx.services.pipelines is not None:
        try:
            model = ctx.services.pipelines.config(camera).model_id
        except (PipelineNotFound, KeyError):
            model = None
        if model in BUILTIN_CLASSES:
            return f"its model `{model}`", set(BUILTIN_CLASSES[model]), True
    seen = ctx.services.monitor.seen_classes(camera) if ctx.services.monitor is not None else set()
    return "its results so far", seen, False


def _all_classes(ctx: CommandContext) -> set[str]:
    names = {h.name for h in ctx.services.pipelines.snapshot()} if ctx.services.pipelines is not None else set()
    out: set[str] = set()
    for name in names:
        out |= camera_classes(ctx, name)[1]
    return out


def check_class(rule: Rule, ctx: CommandContext) -> tuple[Rule, str]:
    """The rule with its class as the model says it, and a note when it was corrected; ValueError naming the
    classes when the camera's model never produces it. Unknown classes (nothing seen yet) pass as given."""
    given = rule.class_name
    if given is None or given == ANY:
        return rule, ""
    if rule.camera == ANY:
        source, known, complete = "the running pipelines", _all_classes(ctx), False
    else:
        source, known, complete = camera_classes(ctx, rule.camera)
    if not known or given in known:
        return rule, ""
    for guess in (given.lower(), class_of(given.lower())):
        if guess in known:
            return replace(rule, class_name=guess), f" (`{given}` taken as `{guess}`, the class {source} reports)"
    if rule.camera == ANY or not complete:  # results so far: another class may still come
        return rule, f" (not seen on {rule.camera if rule.camera != ANY else 'any camera'} yet; so far: " \
                     f"{', '.join(sorted(known))})"
    names = ", ".join(f"`{c}`" for c in sorted(known))
    raise ValueError(f"{rule.camera} never reports `{given}`: {source} gives {names}. "
                     f"Name one of them, e.g. `/vision rule {rule.camera} {_example(rule, sorted(known)[0])}`.")


def _example(rule: Rule, cls: str) -> str:
    return f"count {cls}>{rule.threshold:g}" if rule.kind == "count_over" else f"appears {cls}"
