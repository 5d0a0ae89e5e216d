"""Rules on how many objects of a class are in view: `appears` and `count`."""

from __future__ import annotations

from dataclasses import replace

from bot.backends.base import InferenceResult
from bot.monitoring.kinds.base import (
    ANY,
    MAX_THRESHOLD,
    Firing,
    Rule,
    RuleKindBase,
    RuleState,
    Sightings,
    held_edge,
)
from bot.monitoring.wording import classes, describe_counts, in_view, plural


class _Counted(RuleKindBase):
    """A rule on how many objects (of its class) are in view; fires when that turns true (see `held_edge`)."""

    def triggered(self, rule: Rule, n: int) -> bool:
        raise NotImplementedError

    def firing(self, rule: Rule, shown: dict[str, int], counts: dict[str, int]) -> Firing:
        raise NotImplementedError

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float,
                 seen: Sightings) -> Firing | None:
        counts = result.counts()
        if rule.class_name in (None, ANY):
            n, shown = sum(counts.values()), counts
        else:
            n = counts.get(rule.class_name, 0)
            shown = {rule.class_name: n}
        if held_edge(rule, state, self.triggered(rule, n), now):
            return self.firing(rule, shown, counts)
        return None


class ClassAppears(_Counted):
    kind = "class_appears"

    def id(self, rule: Rule) -> str:
        return f"class_appears:{rule.class_name or ANY}"

    def describe(self, rule: Rule) -> str:
        return f"{rule.class_name or 'an object'} appears"

    def command(self, rule: Rule) -> str:
        return f"/vision rule {rule.camera} appears {rule.class_name or ''}".rstrip()

    def triggered(self, rule: Rule, n: int) -> bool:
        return n > 0

    def firing(self, rule: Rule, shown: dict[str, int], counts: dict[str, int]) -> Firing:
        return Firing(f"{classes(shown)} appeared ({describe_counts(shown)} in view)", counts)


class CountOver(_Counted):
    kind = "count_over"

    def id(self, rule: Rule) -> str:
        return f"count_over:{rule.class_name or ANY}>{rule.threshold:g}"

    def describe(self, rule: Rule) -> str:
        return in_view("more than", rule.threshold, None if rule.class_name == ANY else rule.class_name)

    def command(self, rule: Rule) -> str:
        return f"/vision rule {rule.camera} count {rule.class_name or ANY}>{rule.threshold:g}"

    def triggered(self, rule: Rule, n: int) -> bool:
        return n > rule.threshold

    def firing(self, rule: Rule, shown: dict[str, int], counts: dict[str, int]) -> Firing:
        n, cls = sum(shown.values()), rule.class_name
        what = plural(cls, n) if cls and cls != ANY else f"{n} objects ({describe_counts(shown)})"
        return Firing(f"{what} in view, over {rule.threshold:g}", counts)

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        if rule.threshold + 1 > MAX_THRESHOLD:
            return super().tightened(rule, default_cooldown)
        new = replace(rule, threshold=rule.threshold + 1)
        what = plural(rule.class_name, int(new.threshold)) if rule.class_name else f"{new.threshold:g} objects"
        return new, f"now alerts only above {what}"
