"""Tier-1 rules: what a pipeline result must show for an event, evaluated edge-triggered per camera.

`Rule` is the stored record (kind, camera, class, threshold, cooldown); each kind is one class in
`bot.monitoring.kinds` (ClassAppears, CountOver, LineCrossed, TimeInZone, Near, Then) that owns its id, evaluation,
wording and tightening. This module gathers them: import rules from here.
"""

from __future__ import annotations

from bot.backends.base import InferenceResult
from bot.backends.counting import line_totals
from bot.monitoring.kinds.base import ANY, Firing, Rule, RuleKind, RuleKindBase, RuleState, Sightings
from bot.monitoring.kinds.counted import ClassAppears, CountOver
from bot.monitoring.kinds.line import LineCrossed
from bot.monitoring.kinds.near import Near
from bot.monitoring.kinds.then import Then
from bot.monitoring.kinds.zone import DWELLER_MEMORY_SECONDS, TimeInZone, has_zone, in_zone_over

__all__ = ["ANY", "DWELLER_MEMORY_SECONDS", "KINDS", "RULE_KINDS", "ClassAppears", "CountOver", "Firing",
           "LineCrossed", "Near", "Rule", "RuleKind", "RuleKindBase", "RuleState", "Sightings", "Then", "TimeInZone",
           "default_rules", "evaluate", "has_zone", "in_zone_over"]

RULE_KINDS: dict[str, RuleKindBase] = RuleKindBase.registry
KINDS: tuple[str, ...] = tuple(RULE_KINDS)


def default_rules(result: InferenceResult) -> list[Rule]:
    """What a pipeline is for, guessed from its first result: crossings, dwell, or things appearing."""
    if line_totals(result.values):
        return [Rule("line_crossed")]
    if has_zone(result):
        return [Rule("time_in_zone", threshold=30.0)]
    return [Rule("class_appears")]


def evaluate(rule: Rule, state: RuleState, result: InferenceResult, now: float,
             seen: Sightings | None = None) -> Firing | None:
    """Update the rule's state with a result; a Firing when the rule goes from quiet to triggered.

    `seen`: what every camera showed lately (a `then` rule asks about another camera); none known if omitted.
    """
    return rule.kind_of.evaluate(rule, state, result, now, seen if seen is not None else Sightings())
