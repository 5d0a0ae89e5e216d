"""`near A B [GAP]`: class A within a gap of, or overlapping, class B in the same frame (person near a vehicle).

The gap is in box sizes: the pixels between the two boxes over the smaller box's longer side, so 0.5 means "closer
than half the smaller object" at any resolution and any distance from the camera (0: touching or overlapping).
"""

from __future__ import annotations

import math
from dataclasses import replace

from bot.backends.base import Detection, InferenceResult
from bot.monitoring.kinds.base import Firing, Rule, RuleKindBase, RuleState, Sightings, held_edge
from bot.monitoring.wording import plural

DEFAULT_GAP = 0.5


def gap(a: Detection, b: Detection) -> float:
    """The space between two boxes over the smaller box's longer side; 0 when they touch or overlap."""
    (ax1, ay1, ax2, ay2), (bx1, by1, bx2, by2) = a.xyxy, b.xyxy
    dx = max(bx1 - ax2, ax1 - bx2, 0.0)
    dy = max(by1 - ay2, ay1 - by2, 0.0)
    size = min(max(ax2 - ax1, ay2 - ay1), max(bx2 - bx1, by2 - by1))
    if dx == dy == 0.0:
        return 0.0
    return math.hypot(dx, dy) / size if size > 0 else math.inf


def closest(result: InferenceResult, first: str, second: str) -> float | None:
    """The smallest gap between an object of `first` and another object of `second` (None: no such pair)."""
    gaps = [gap(a, b) for i, a in enumerate(result.detections) if a.class_name == first
            for j, b in enumerate(result.detections) if b.class_name == second and i != j]
    return min(gaps, default=None)


class Near(RuleKindBase):
    """Fires when a pair of the two classes comes within the gap (edge-triggered: once per meeting)."""

    kind = "near"

    def id(self, rule: Rule) -> str:
        return f"near:{rule.class_name}+{rule.other_class}<={rule.threshold:g}"

    def describe(self, rule: Rule) -> str:
        pair = _pair(rule)
        if rule.threshold <= 0:
            return f"{pair} touch or overlap"
        return f"{pair} are less than {rule.threshold:g}× the smaller one's size apart"

    def command(self, rule: Rule) -> str:
        return f"/vision rule {rule.camera} near {rule.class_name} {rule.other_class} {rule.threshold:g}"

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float,
                 seen: Sightings) -> Firing | None:
        if not rule.class_name or not rule.other_class:
            return None
        g = closest(result, rule.class_name, rule.other_class)
        if not held_edge(rule, state, g is not None and g <= rule.threshold, now) or g is None:
            return None
        how = "boxes overlap" if g == 0 else f"{g:.2g}× the smaller one's size apart, within {rule.threshold:g}"
        near = f"{plural(rule.class_name, 2)} near each other" if rule.class_name == rule.other_class else \
            f"{rule.class_name} near {rule.other_class}"
        return Firing(f"{near} ({how})", result.counts())

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        if rule.threshold <= 0:  # already "touching only": wait longer between alerts instead
            return super().tightened(rule, default_cooldown)
        new = replace(rule, threshold=round(rule.threshold / 2, 2))
        return new, f"now alerts only when they are within {new.threshold:g}× the smaller one's size"


def _pair(rule: Rule) -> str:
    """'person and car', or '2 people' when both classes are one (people close to each other)."""
    if rule.class_name == rule.other_class:
        return plural(rule.class_name or "", 2)
    return f"{rule.class_name} and {rule.other_class}"
