"""What a watch waits for: one class per condition kind; the kinds tier-1 rules have are those rules' own classes.

`RuleCondition` runs a `Rule` (appears, count over, line crossed, time in zone) through `rules.evaluate`, so a watch
and a rule of one kind are one evaluator; `CountUnder` and `AbsentFor` are the kinds only watches have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bot.backends.base import InferenceResult
from bot.monitoring.rules import ANY, Firing, Rule, RuleState, evaluate
from bot.monitoring.wording import describe_counts, in_view, plural


class Condition:
    """One kind of watch condition: when it turns true (edge-triggered like a rule), how it reads, how it is stored."""

    kind: ClassVar[str]

    def describe(self) -> str:
        raise NotImplementedError

    def needs(self) -> tuple[str, str]:
        """(what the camera's pipeline must have for it to ever hold, the workflow step that gives it), said when the
        watch is set on a camera whose live pipeline lacks it (('', ''): nothing)."""
        return "", ""

    def takes_seconds(self) -> float:
        """How long it must hold before it can turn true at all (an absence, a stay in the zone); 0: at once."""
        return 0.0

    def evaluate(self, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        raise NotImplementedError

    def as_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Condition:
        raise NotImplementedError


@dataclass(frozen=True)
class RuleCondition(Condition):
    """A tier-1 rule's kind as a watch condition (camera and cooldown of the rule are unused here)."""

    rule: Rule
    kind: ClassVar[str] = "rule"

    def describe(self) -> str:
        return self.rule.kind_of.describe(self.rule)

    def needs(self) -> tuple[str, str]:
        return self.rule.kind_of.needs(self.rule)

    def takes_seconds(self) -> float:
        return self.rule.threshold if self.rule.kind == "time_in_zone" else 0.0

    def evaluate(self, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        return evaluate(self.rule, state, result, now)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule.as_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Condition:
        return cls(Rule.from_dict(d["rule"]))


def _count(result: InferenceResult, class_name: str | None) -> tuple[int, dict[str, int]]:
    counts = result.counts()
    if class_name in (None, ANY):
        return sum(counts.values()), counts
    return counts.get(class_name, 0), counts


@dataclass(frozen=True)
class CountUnder(Condition):
    """Fewer than `threshold` of a class in view ('count person<1': nobody left)."""

    class_name: str | None
    threshold: float
    kind: ClassVar[str] = "count_under"

    def describe(self) -> str:
        return in_view("fewer than", self.threshold, self.class_name)

    def evaluate(self, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        n, counts = _count(result, self.class_name)
        if n >= self.threshold:
            state.active = False  # back over: a later drop fires again (after a rejected confirmation)
            return None
        if state.active:
            return None
        state.active = True
        return Firing(f"{plural(self.class_name or 'object', n)} in view, under {self.threshold:g}", counts)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "class_name": self.class_name, "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Condition:
        return cls(d.get("class_name"), float(d["threshold"]))


@dataclass(frozen=True)
class AbsentFor(Condition):
    """No `class_name` in view for `seconds` in a row, counted from the first frame the watch saw or the last sighting
    ('let me know when the last person leaves': `absent person 30`)."""

    class_name: str
    seconds: float
    kind: ClassVar[str] = "absent_for"

    def describe(self) -> str:
        return f"no {self.class_name} is in view for {self.seconds:g} s"

    def takes_seconds(self) -> float:
        return self.seconds

    def evaluate(self, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        n, counts = _count(result, self.class_name)
        if n > 0 or not state.last_seen:
            state.last_seen, state.active = now, False  # seen (or the first frame): the quiet starts again
            return None
        if state.active or now - state.last_seen < self.seconds:
            return None
        state.active = True
        gone = now - state.last_seen
        return Firing(f"no {self.class_name} in view for {gone:.0f} s ({describe_counts(counts)} in view)", counts)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "class_name": self.class_name, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Condition:
        return cls(str(d["class_name"]), float(d["seconds"]))


CONDITIONS: dict[str, type[Condition]] = {k.kind: k for k in (RuleCondition, CountUnder, AbsentFor)}


def condition_from_dict(d: dict[str, Any]) -> Condition:
    """The stored form back as its class (ValueError for a kind this version does not know)."""
    kind = str(d.get("kind"))
    if kind not in CONDITIONS:
        raise ValueError(f"unknown watch condition {kind!r}; known: {', '.join(CONDITIONS)}")
    return CONDITIONS[kind].from_dict(d)
