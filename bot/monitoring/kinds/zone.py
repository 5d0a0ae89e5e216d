"""Rules on a zone: `zone SECONDS` fires once per object that stays in it past the threshold."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.backends.base import Detection, InferenceResult
from bot.monitoring.kinds.base import ANY, Firing, Rule, RuleKindBase, RuleState, Sightings
from bot.monitoring.wording import object_name

DWELLER_MEMORY_SECONDS = 60.0  # an object unseen this long may fire again (the tracker has probably lost it)


def has_zone(result: InferenceResult) -> bool:
    """The result comes from a workflow with a time_in_zone step (its detections carry seconds in zone)."""
    return any(d.time_in_zone is not None for d in result.detections)


def in_zone_over(result: InferenceResult, seconds: float) -> list[Detection]:
    """Objects in the zone for longer than `seconds`, longest first (read from detections, never from ids)."""
    over = [d for d in result.detections if d.time_in_zone is not None and d.time_in_zone > seconds]
    return sorted(over, key=lambda d: -(d.time_in_zone or 0.0))


class TimeInZone(RuleKindBase):
    """Fires once per object that stays in the zone past the threshold: 'person #12 in the zone for 34 s'."""

    kind = "time_in_zone"
    step = "time_in_zone"

    def id(self, rule: Rule) -> str:
        return f"time_in_zone>{rule.threshold:g}s"

    def describe(self, rule: Rule) -> str:
        what = rule.class_name or "an object"
        return f"{what} stays in the zone over {rule.threshold:g} s"

    def needs(self, rule: Rule) -> tuple[str, str]:
        return "a pipeline started with zone=", self.step

    def command(self, rule: Rule) -> str:
        return f"/vision rule {rule.camera} zone {rule.threshold:g}"

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float,
                 seen: Sightings) -> Firing | None:
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
        if rule.threshold >= 86400:  # a day in the zone is as long as a stay is counted: wait longer instead
            return super().tightened(rule, default_cooldown)
        new = replace(rule, threshold=float(min(86400, round(rule.threshold * 1.5))))
        return new, f"now alerts only after {new.threshold:g} s in the zone"


def _key(d: Detection) -> Any:
    return d.tracker_id if d.tracker_id is not None else d.class_name
