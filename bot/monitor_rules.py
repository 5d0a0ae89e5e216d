"""Tier-1 rules: what a pipeline result must show for an event, evaluated edge-triggered per camera."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bot.backends.base import InferenceResult, PipelineHandle

RuleKind = Literal["class_appears", "count_over", "line_crossed", "time_in_zone"]
KINDS: tuple[str, ...] = ("class_appears", "count_over", "line_crossed", "time_in_zone")
ANY = "*"
_LIVE_PREFIXES = ("rtsp://", "rtsps://", "rtmp://", "http://", "https://", "udp://", "tcp://")


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


def zone_seconds(values: dict[str, Any]) -> float | None:
    """The longest time in zone a result reports, if it reports any."""
    nums = [n for k, v in values.items() if "time_in_zone" in k for n in _numbers(v)]
    return max(nums) if nums else None


def default_rules(result: InferenceResult) -> list[Rule]:
    """What a pipeline is for, guessed from its first result: crossings, dwell, or things appearing."""
    if line_totals(result.values):
        return [Rule("line_crossed")]
    if zone_seconds(result.values) is not None:
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
    if rule.kind == "class_appears":
        n = sum(counts.values()) if rule.class_name in (None, ANY) else counts.get(rule.class_name, 0)
        triggered = n > 0
    elif rule.kind == "count_over":
        n = sum(counts.values()) if rule.class_name in (None, ANY) else counts.get(rule.class_name, 0)
        triggered = n > rule.threshold
    else:
        secs = zone_seconds(result.values)
        n = int(secs or 0)
        triggered = secs is not None and secs > rule.threshold
    return _edge(rule, state, triggered, n, counts, now)


def _edge(rule: Rule, state: RuleState, triggered: bool, n: int, counts: dict[str, int], now: float) -> Firing | None:
    if triggered:
        state.last_seen = now
        if state.active:
            return None
        state.active = True
        what = rule.class_name or "object"
        if rule.kind == "class_appears":
            return Firing(f"{what} appeared ({n} in view)", counts)
        if rule.kind == "count_over":
            return Firing(f"{n} {what} in view, over {rule.threshold:g}", counts)
        return Firing(f"an object has been in the zone {n}s (over {rule.threshold:g}s)", counts)
    # a brief miss (detector flicker) must not re-arm the rule, or one visitor would fire on every blink
    if state.active and now - state.last_seen >= rule.clear_seconds:
        state.active = False
    return None


def health_problems(
    h: PipelineHandle, now: float, last_result: float, stall_seconds: float, min_fps: float
) -> dict[str, str]:
    """What is wrong with a pipeline right now (rule -> one line saying what to do), from its handle."""
    live = h.video_reference.startswith(_LIVE_PREFIXES) or h.video_reference.isdigit()
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
