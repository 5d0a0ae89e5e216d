"""What every rule kind shares: the stored `Rule`, its per-camera `RuleState`, a `Firing`, and `RuleKindBase`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Literal

from bot.backends.base import InferenceResult
from bot.objects.owner import Owner
from bot.objects.rule import MAX_COOLDOWN
from bot.objects.text import check_name
from bot.storage import records

RuleKind = Literal["class_appears", "count_over", "line_crossed", "time_in_zone", "near", "then"]
ANY = "*"
MAX_THRESHOLD = 1_000_000.0  # a count, seconds (a day at most for a zone) or box sizes: far past any camera's


@dataclass(frozen=True)
class Rule:
    """One tier-1 rule. camera '*' applies to every pipeline; threshold is a count, seconds, or a distance.

    other_class: the second class of a `near` rule; after_camera: the camera a `then` rule must see the class on
    first (the rule itself lives on, and alerts on, the camera that sees it next).
    """

    kind: RuleKind
    camera: str = ANY
    class_name: str | None = None
    threshold: float = 0.0
    cooldown_seconds: float | None = None  # None: monitoring.alert_cooldown_seconds
    clear_seconds: float = 5.0  # absent this long before a class 'appears' again
    enabled: bool = True
    other_class: str | None = None
    after_camera: str | None = None
    owner: Owner | None = field(default=None, compare=False)  # who set it and where (None: the operator)
    verify: bool | None = field(default=None, compare=False)  # the model checks its alerts (None: route / config)

    @property
    def kind_of(self) -> RuleKindBase:
        """The class that owns this kind's id, evaluation, wording and tightening."""
        return RuleKindBase.registry[self.kind]

    @property
    def id(self) -> str:
        """Stable name used in alerts and cooldowns, e.g. 'count_over:person>3'."""
        return self.kind_of.id(self)

    def describe(self) -> str:
        """What makes it fire, for people: 'alerts when more than 3 people are in view'."""
        return f"alerts when {self.kind_of.describe(self)}"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(replace(self, owner=None))
        d["owner"] = self.owner.model_dump() if self.owner is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Rule:
        """A stored rule (ValueError / TypeError for a record of another shape: the store sets it aside)."""
        kinds = RuleKindBase.registry
        if d.get("kind") not in kinds:
            raise ValueError(f"unknown rule kind {d.get('kind')!r}; use one of {', '.join(kinds)}")
        rule = records.typed(cls, d)  # every field of its type: a class that is a dict never reaches a listing
        for value in (rule.camera, rule.class_name, rule.other_class, rule.after_camera):
            if value is not None and value != ANY:
                check_name(value, "a rule's camera or class")
        if not (abs(rule.threshold) <= MAX_THRESHOLD and 0 <= rule.clear_seconds <= 86400
                and (rule.cooldown_seconds is None or 0 <= rule.cooldown_seconds <= MAX_COOLDOWN)):
            raise ValueError("a rule's threshold, cooldown (0 to a week) or clear time is out of bounds")
        return rule


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


class Sightings:
    """When each camera last showed each class, across every pipeline (the monitor keeps one): what lets a rule on
    one camera ask about another. Not locked: the monitor updates and reads it under its own lock."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], float] = {}

    def saw(self, camera: str, result: InferenceResult, now: float) -> None:
        shown = [c for c, n in result.counts().items() if n]
        for cls in shown + ([ANY] if shown else []):
            self._last[(camera, cls)] = now

    def last(self, camera: str, class_name: str | None) -> float | None:
        """When `camera` last showed the class (None or '*': anything), or None if it never did."""
        return self._last.get((camera, class_name or ANY))


def held_edge(rule: Rule, state: RuleState, triggered: bool, now: float) -> bool:
    """True when the condition turns on (a Firing is due); it re-arms after `clear_seconds` without it, so detector
    flicker (a brief miss) does not make one visitor fire on every blink."""
    if triggered:
        state.last_seen = now
        if state.active:
            return False
        state.active = True
        return True
    if state.active and now - state.last_seen >= rule.clear_seconds:
        state.active = False
    return False


class RuleKindBase:
    """One kind of tier-1 rule: its id, when it fires (edge-triggered per camera), how it reads, and one step
    less eager after repeated false alarms (by default: twice the wait between alerts). Each concrete kind
    registers itself in `registry` by its `kind`."""

    kind: str
    registry: ClassVar[dict[str, RuleKindBase]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            RuleKindBase.registry[cls.kind] = cls()

    def id(self, rule: Rule) -> str:
        return self.kind

    def describe(self, rule: Rule) -> str:
        """What makes it fire, in a few words (said again in every answer, the model's question, a done line)."""
        raise NotImplementedError

    step = ""  # the workflow step this kind reads ('line_counter'): a pipeline without one never fires it

    def needs(self, rule: Rule) -> tuple[str, str]:
        """(what the camera's pipeline must have for this kind to ever fire, the workflow step that gives it), said
        when it is set and the camera's live pipeline has no such step (('', ''): nothing). A watch on the rule's
        condition answers the same pair (bot/monitoring/watch_conditions.py)."""
        return "", ""

    def command(self, rule: Rule) -> str:
        """The `/vision rule` that sets this rule (what an error message suggests typing)."""
        raise NotImplementedError

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float,
                 seen: Sightings) -> Firing | None:
        raise NotImplementedError

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        """One step less eager, within the bounds every door holds (a cooldown of at most a week)."""
        cooldown = min(MAX_COOLDOWN, 2 * (default_cooldown if rule.cooldown_seconds is None
                                          else rule.cooldown_seconds) or 60.0)
        minutes = f"{cooldown / 60:g} min" if cooldown >= 60 else f"{cooldown:g} s"
        return replace(rule, cooldown_seconds=cooldown), f"now waits {minutes} between alerts"
