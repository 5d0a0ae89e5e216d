"""Tier-1 rules: what a pipeline result must show for an event, evaluated edge-triggered per camera."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bot.backends.base import Detection, InferenceResult, PipelineHandle
from bot.media.sources import is_live
from bot.monitoring.wording import classes, describe_counts, object_name, plural

RuleKind = Literal["class_appears", "count_over", "line_crossed", "time_in_zone"]
KINDS: tuple[str, ...] = ("class_appears", "count_over", "line_crossed", "time_in_zone")
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
    def id(self) -> str:
        """Stable name used in alerts and cooldowns, e.g. 'count_over:person>3'."""
        if self.kind == "class_appears":
            return f"class_appears:{self.class_name or ANY}"
        if self.kind == "count_over":
            return f"count_over:{self.class_name or ANY}>{self.threshold:g}"
        if self.kind == "time_in_zone":
            return f"time_in_zone>{self.threshold:g}s"
        return "line_crossed"

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


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _numbers(v)]
    return []


def line_totals(values: dict[str, Any]) -> dict[str, float]:
    """count_in / count_out totals, whatever the line counter step is called (e.g. 'line_counter_count_in')."""
    out: dict[str, float] = {}
    for key, val in values.items():
        for side in ("count_in", "count_out"):
            if key == side or key.endswith("_" + side) or key.endswith("." + side):
                nums = _numbers(val)
                if nums:
                    out[side] = out.get(side, 0.0) + sum(nums)
    return out


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
    counts = result.counts()
    if rule.kind == "line_crossed":
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
            {**counts, **tot},
        )
    if rule.kind == "time_in_zone":
        return _dwell(rule, state, result, now)
    if rule.class_name in (None, ANY):
        n, shown = sum(counts.values()), counts
    else:
        n = counts.get(rule.class_name, 0)
        shown = {rule.class_name: n}
    triggered = n > 0 if rule.kind == "class_appears" else n > rule.threshold
    return _edge(rule, state, triggered, shown, counts, now)


def _dwell(rule: Rule, state: RuleState, result: InferenceResult, now: float) -> Firing | None:
    """Fires once per object that stays in the zone past the threshold: 'person #12 in the zone for 34 s'."""
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


def _key(d: Detection) -> Any:
    return d.tracker_id if d.tracker_id is not None else d.class_name


def _edge(
    rule: Rule, state: RuleState, triggered: bool, shown: dict[str, int], counts: dict[str, int], now: float
) -> Firing | None:
    if triggered:
        state.last_seen = now
        if state.active:
            return None
        state.active = True
        if rule.kind == "class_appears":
            return Firing(f"{classes(shown)} appeared ({describe_counts(shown)} in view)", counts)
        n = sum(shown.values())
        cls = rule.class_name
        what = plural(cls, n) if cls and cls != ANY else f"{n} objects ({describe_counts(shown)})"
        return Firing(f"{what} in view, over {rule.threshold:g}", counts)
    # a brief miss (detector flicker) must not re-arm the rule, or one visitor would fire on every blink
    if state.active and now - state.last_seen >= rule.clear_seconds:
        state.active = False
    return None


def health_problems(
    h: PipelineHandle, now: float, last_result: float, stall_seconds: float, min_fps: float
) -> dict[str, str]:
    """What is wrong with a pipeline right now (rule -> one line saying what to do), from its handle."""
    live = is_live(h.video_reference)
    if h.status == "error":
        return {
            "pipeline_error": f"pipeline {h.name} failed: {h.error or 'unknown error'}. Check the source, then restart it."
        }
    if h.status == "finished" and live:  # a file that ends is done; a stream that ends has dropped
        return {
            "source_dropped": f"the stream of {h.name} ended ({h.video_reference}). Check the camera, then restart the pipeline."
        }
    if h.status != "running":
        return {}
    since = max(last_result, h.started_at)
    if now - since > stall_seconds:
        return {"stalled": f"no frames from {h.name} for {int(now - since)}s. Check the camera connection."}
    if h.fps is not None and h.fps < min_fps and now - h.started_at > stall_seconds:
        return {"low_fps": f"{h.name} is running at {h.fps:.2f} fps (under {min_fps:g})."}
    return {}
