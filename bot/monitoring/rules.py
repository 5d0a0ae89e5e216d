"""Tier-1 rules: what a pipeline result must show for an event, evaluated edge-triggered per camera.

`Rule` is the stored record (kind, camera, class, threshold, cooldown); each kind is one class below
(ClassAppears, CountOver, LineCrossed, TimeInZone) that owns its id, evaluation, wording and tightening.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from bot.backends.base import Detection, InferenceResult
from bot.backends.counting import line_totals
from bot.monitoring.wording import classes, describe_counts, object_name, plural

RuleKind = Literal["class_appears", "count_over", "line_crossed", "time_in_zone"]
ANY = "*"


@dataclass(frozen=True)
class Rule:
    """One tier-1 rule. camera '*' applies to every pipeline; threshold is a count or seconds in zone."""

    kind: RuleKind
    camera: str = ANY
    class_name: str | None = None
    threshold: float = 0.0
    cooldown_seconds: float | None = None  # None: monitoring.alert_cooldown_seconds
    clear_seconds: float = 5.0  # absent this long before a class 'appears' again
    enabled: bool = True

    @property
    def kind_of(self) -> RuleKindBase:
        """The class that owns this kind's id, evaluation, wording and tightening."""
        return RULE_KINDS[self.kind]

    @property
    def id(self) -> str:
        """Stable name used in alerts and cooldowns, e.g. 'count_over:person>3'."""
        return self.kind_of.id(self)

    def describe(self) -> str:
        """What makes it fire, for people: 'alerts when more than 3 person are in view'."""
        return f"alerts when {self.kind_of.describe(self)}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Rule:
        if d.get("kind") not in KINDS:
            raise ValueError(f"unknown rule kind {d.get('kind')!r}; use one of {', '.join(KINDS)}")
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class RuleState:
    """What a rule saw last on one camera, so it fires on the change and not on every frame."""

    active: bool = False
    last_seen: float = 0.0
    totals: dict[str, float] = field(default_factory=dict)
    dwellers: dict[Any, float] = field(default_factory=dict)  # objects a zone rule fired for -> when last over it


@dataclass(frozen=True)
class Firing:
    """A rule fired: a one-line description and the numbers behind it."""

    text: str
    counts: dict[str, int]


def has_zone(result: InferenceResult) -> bool:
    """The result comes from a workflow with a time_in_zone step (its detections carry seconds in zone)."""
    return any(d.time_in_zone is not None for d in result.detections)


def in_zone_over(result: InferenceResult, seconds: float) -> list[Detection]:
    """Objects in the zone for longer than `seconds`, longest first (read from detections, never from ids)."""
    over = [d for d in result.detections if d.time_in_zone is not None and d.time_in_zone > seconds]
    return sorted(over, key=lambda d: -(d.time_in_zone or 0.0))


DWELLER_MEMORY_SECONDS = 60.0  # an object unseen this long may fire again (the tracker has probably lost it)


def default_rules(result: InferenceResult) -> list[Rule]:
    """What a pipeline is for, guessed from its first result: crossings, dwell, or things appearing."""
    if line_totals(result.values):
        return [Rule("line_crossed")]
    if has_zone(result):
        return [Rule("time_in_zone", threshold=30.0)]
    return [Rule("class_appears")]


def evaluate(rule: Rule, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
    """Update the rule's state with a result; a Firing when the rule goes from quiet to triggered."""
    return rule.kind_of.evaluate(rule, state, result, now)


class RuleKindBase:
    """One kind of tier-1 rule: its id, when it fires (edge-triggered per camera), how it reads, and one step
    less eager after repeated false alarms (by default: twice the wait between alerts)."""

    kind: str

    def id(self, rule: Rule) -> str:
        return self.kind

    def describe(self, rule: Rule) -> str:
        raise NotImplementedError

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        raise NotImplementedError

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        cooldown = 2 * (default_cooldown if rule.cooldown_seconds is None else rule.cooldown_seconds) or 60.0
        minutes = f"{cooldown / 60:g} min" if cooldown >= 60 else f"{cooldown:g} s"
        return replace(rule, cooldown_seconds=cooldown), f"now waits {minutes} between alerts"


class _Counted(RuleKindBase):
    """A rule on how many objects (of its class) are in view; fires when that turns true, re-arms after
    `clear_seconds` without it (a brief miss, detector flicker, must not make one visitor fire on every blink)."""

    def triggered(self, rule: Rule, n: int) -> bool:
        raise NotImplementedError

    def firing(self, rule: Rule, shown: dict[str, int], counts: dict[str, int]) -> Firing:
        raise NotImplementedError

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        counts = result.counts()
        if rule.class_name in (None, ANY):
            n, shown = sum(counts.values()), counts
        else:
            n = counts.get(rule.class_name, 0)
            shown = {rule.class_name: n}
        if self.triggered(rule, n):
            state.last_seen = now
            if state.active:
                return None
            state.active = True
            return self.firing(rule, shown, counts)
        if state.active and now - state.last_seen >= rule.clear_seconds:
            state.active = False
        return None


class ClassAppears(_Counted):
    kind = "class_appears"

    def id(self, rule: Rule) -> str:
        return f"class_appears:{rule.class_name or ANY}"

    def describe(self, rule: Rule) -> str:
        return f"{rule.class_name or 'an object'} appears"

    def triggered(self, rule: Rule, n: int) -> bool:
        return n > 0

    def firing(self, rule: Rule, shown: dict[str, int], counts: dict[str, int]) -> Firing:
        return Firing(f"{classes(shown)} appeared ({describe_counts(shown)} in view)", counts)


class CountOver(_Counted):
    kind = "count_over"

    def id(self, rule: Rule) -> str:
        return f"count_over:{rule.class_name or ANY}>{rule.threshold:g}"

    def describe(self, rule: Rule) -> str:
        return f"more than {rule.threshold:g} {rule.class_name or 'objects'} are in view"

    def triggered(self, rule: Rule, n: int) -> bool:
        return n > rule.threshold

    def firing(self, rule: Rule, shown: dict[str, int], counts: dict[str, int]) -> Firing:
        n, cls = sum(shown.values()), rule.class_name
        what = plural(cls, n) if cls and cls != ANY else f"{n} objects ({describe_counts(shown)})"
        return Firing(f"{what} in view, over {rule.threshold:g}", counts)

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        new = replace(rule, threshold=rule.threshold + 1)
        what = plural(rule.class_name, int(new.threshold)) if rule.class_name else f"{new.threshold:g} objects"
        return new, f"now alerts only above {what}"


class LineCrossed(RuleKindBase):
    kind = "line_crossed"

    def describe(self, rule: Rule) -> str:
        return "something crosses the line"

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        totals = line_totals(result.values)
        if not totals:
            return None
        prev, state.totals = state.totals, totals
        if not prev:
            return None  # first sighting: the baseline, not a crossing
        delta = {k: int(v - prev.get(k, 0.0)) for k, v in totals.items() if v > prev.get(k, 0.0)}
        if not delta:
            return None
        moves = ", ".join(f"{k.removeprefix('count_')} +{n}" for k, n in delta.items())
        tot = {k: int(v) for k, v in totals.items()}
        return Firing(
            f"line crossed ({moves}; totals in {tot.get('count_in', 0)} / out {tot.get('count_out', 0)})",
            {**result.counts(), **tot},
        )


class TimeInZone(RuleKindBase):
    """Fires once per object that stays in the zone past the threshold: 'person #12 in the zone for 34 s'."""

    kind = "time_in_zone"

    def id(self, rule: Rule) -> str:
        return f"time_in_zone>{rule.threshold:g}s"

    def describe(self, rule: Rule) -> str:
        what = rule.class_name or "an object"
        return f"{what} stays in the zone over {rule.threshold:g} s (needs a pipeline started with zone=)"

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
        for d in result.detections:  # back under the threshold (left and re-entered): may fire again later
            if d.time_in_zone is not None and d.time_in_zone <= rule.threshold:
                state.dwellers.pop(_key(d), None)
        over = [d for d in in_zone_over(result, rule.threshold)
                if rule.class_name in (None, ANY) or d.class_name == rule.class_name]
        new = [d for d in over if _key(d) not in state.dwellers]
        state.dwellers.update({_key(d): now for d in over})
        state.dwellers = {k: t for k, t in state.dwellers.items() if now - t < DWELLER_MEMORY_SECONDS}
        if not new:
            return None
        first = new[0]
        more = f" (and {len(new) - 1} more)" if len(new) > 1 else ""
        text = f"{object_name(first)} in the zone for {first.time_in_zone:.0f} s{more}, over {rule.threshold:g} s"
        return Firing(text, {**result.counts(), "in_zone_over": len(over)})

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        new = replace(rule, threshold=round(rule.threshold * 1.5))
        return new, f"now alerts only after {new.threshold:g} s in the zone"


def _key(d: Detection) -> Any:
    return d.tracker_id if d.tracker_id is not None else d.class_name


RULE_KINDS: dict[str, RuleKindBase] = {k.kind: k for k in (ClassAppears(), CountOver(), LineCrossed(), TimeInZone())}
KINDS: tuple[str, ...] = tuple(RULE_KINDS)
