"""The classes a camera's model produces, so a rule names one of them (`count people>3` on a model that says
`person` would never fire): corrected when it is a plural or a case slip, refused otherwise, naming the classes."""

from __future__ import annotations

from dataclasses import replace

from bot.backends.workflows import BUILTIN_CLASSES
from bot.commands.context import CommandContext
from bot.monitoring.rules import ANY, Rule
from bot.monitoring.wording import class_of
from bot.pipelines.state import PipelineNotFound


class UnknownClass(ValueError):
    """A class a camera's model never produces; str() names its classes and a rule that would work."""

    def __init__(self, camera: str, given: str, source: str, known: set[str], example: str) -> None:
        self.camera, self.given, self.source, self.known = camera, given, source, sorted(known)
        super().__init__(self.line(example))

    def line(self, example: str) -> str:
        """The refusal with `example` as the command to type instead (a rule's, a watch's)."""
        return f"{self.camera} never reports `{self.given}`: {self.source} gives {self.names}. Name one of them, " \
               f"e.g. `{example}`."

    @property
    def names(self) -> str:
        return ", ".join(f"`{c}`" for c in self.known)

    @property
    def suggestion(self) -> str:
        """The class named in the example instead of the given one."""
        return self.known[0]


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


def _named(rule: Rule) -> list[tuple[str, str]]:
    """(field, camera) of each class the rule names: a `near` rule's two classes, a `then` rule's class on both
    cameras (the first camera's name checked last, so a correction agrees with the camera that alerts)."""
    out = [("class_name", rule.camera)]
    if rule.other_class is not None:
        out.append(("other_class", rule.camera))
    if rule.after_camera is not None:
        out.append(("class_name", rule.after_camera))
    return out


def _with(rule: Rule, name: str, value: str | None) -> Rule:
    return replace(rule, other_class=value) if name == "other_class" else replace(rule, class_name=value)


def check_class(rule: Rule, ctx: CommandContext) -> tuple[Rule, str]:
    """The rule with its classes as the models say them, and a note when one was corrected; ValueError naming the
    classes when a camera's model never produces one. Unknown classes (nothing seen yet) pass as given."""
    notes = ""
    for name, camera in _named(rule):
        given = getattr(rule, name)
        fixed, note = _check_one(rule, given, camera, ctx)
        rule, notes = _with(rule, name, fixed), notes + note
    return rule, notes


def _check_one(rule: Rule, given: str | None, camera: str, ctx: CommandContext) -> tuple[str | None, str]:
    if given is None or given == ANY:
        return given, ""
    if camera == ANY:
        source, known, complete = "the running pipelines", _all_classes(ctx), False
    else:
        source, known, complete = camera_classes(ctx, camera)
    if not known or given in known:
        return given, ""
    for guess in (given.lower(), class_of(given.lower())):
        if guess in known:
            return guess, f" (`{given}` taken as `{guess}`, the class {source} reports)"
    if camera == ANY or not complete:  # results so far: another class may still come
        return given, f" (`{given}` not seen on {camera if camera != ANY else 'any camera'} yet; so far: " \
                      f"{', '.join(sorted(known))})"
    example = rule
    for name in {n for n, _ in _named(rule) if getattr(rule, n) == given}:
        example = _with(example, name, sorted(known)[0])
    raise UnknownClass(camera, given, source, known, example.kind_of.command(example))


def never_fires(rule: Rule, ctx: CommandContext) -> str:
    """' — never fires: street's model `builtin/people` gives `person`' for a stored rule whose class its camera's
    model does not produce (or spells otherwise), by `check_class`'s own test; '' when it may fire."""
    try:
        fixed, _ = check_class(rule, ctx)
    except UnknownClass as exc:
        return f" — never fires: {exc.camera}'s {exc.source.removeprefix('its ')} gives {exc.names}"
    changed = [(getattr(rule, n), getattr(fixed, n)) for n, _ in _named(rule) if getattr(rule, n) != getattr(fixed, n)]
    if changed:
        said = ", ".join(f"`{new}`, not `{old}`" for old, new in changed)
        return f" — never fires: {rule.camera} reports {said} (`/vision rule` it again with that class)"
    return ""
