"""Rules on a counting line: `line` fires when the line's in/out totals grow."""

from __future__ import annotations

from bot.backends.base import InferenceResult
from bot.backends.counting import line_totals
from bot.monitoring.kinds.base import Firing, Rule, RuleKindBase, RuleState, Sightings


class LineCrossed(RuleKindBase):
    kind = "line_crossed"
    step = "line_counter"

    def describe(self, rule: Rule) -> str:
        return "something crosses the line"

    def needs(self, rule: Rule) -> tuple[str, str]:
        return "a pipeline started with line=", self.step

    def command(self, rule: Rule) -> str:
        return f"/vision rule {rule.camera} line"

    def evaluate(self, rule: Rule, state: RuleState, result: InferenceResult, now: float,
                 seen: Sightings) -> Firing | None:
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
