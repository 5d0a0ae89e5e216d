"""`CAM1 then CAM2 [CLASS] [SECONDS]`: a class seen on one camera, then on another within a window (someone who
passed the gate reaches the door). The rule lives on, and alerts on, the second camera; the first camera's
sightings come from the monitor's `Sightings`, which sees every pipeline."""

from __future__ import annotations

from dataclasses import replace

from bot.backends.base import InferenceResult
from bot.monitoring.kinds.base import ANY, Firing, Rule, RuleKindBase, RuleState, Sightings, held_edge

DEFAULT_WINDOW = 60.0


class Then(RuleKindBase):
    """Fires when the class appears on this camera while the other camera saw it within the window before."""

    kind = "then"

    def id(self, rule: Rule) -> str:
        return f"then:{rule.class_name or ANY}@{rule.after_camera}<={rule.threshold:g}s"

    def describe(self, rule: Rule) -> str:
        what = rule.class_name or "an object"
        return f"{what} is seen on {rule.after_camera}, then on {rule.camera} within {rule.threshold:g} s"

    def command(self, rule: Rule) -> str:
        return f"/vision rule {rule.after_camera} then {rule.camera} {rule.class_name or ANY} {rule.threshold:g}"

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float,
                 seen: Sightings) -> Firing | None:
        counts = result.counts()
        n = sum(counts.values()) if rule.class_name in (None, ANY) else counts.get(rule.class_name or "", 0)
        if not held_edge(rule, state, n > 0, now) or not rule.after_camera:
            return None
        before = seen.last(rule.after_camera, rule.class_name)
        if before is None or now - before > rule.threshold:
            return None
        what = rule.class_name if rule.class_name not in (None, ANY) else "an object"
        return Firing(f"{what} here {now - before:.0f} s after {rule.after_camera} saw it "
                      f"(within {rule.threshold:g} s)", counts)

    def tightened(self, rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
        if rule.threshold <= 1:
            return super().tightened(rule, default_cooldown)
        new = replace(rule, threshold=float(max(1, round(rule.threshold / 2))))
        return new, f"now alerts only within {new.threshold:g} s of {rule.after_camera}"
