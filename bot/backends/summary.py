"""Result summaries the model reads: counts, confidences, tracker ids, line counts in <= 150 tokens."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bot.backends.base import InferenceResult
from bot.backends.workflows import CONDITIONS
from bot.llm.tokens import estimate_tokens

MAX_TOKENS = 150
MAX_CLASSES = 6
MAX_CONFS = 3
MAX_IDS = 12
MAX_VALUES = 6
MAX_STR = 40


def _flatten(values: dict[str, Any], prefix: str = "", depth: int = 0) -> Iterable[tuple[str, Any]]:
    for key, val in values.items():
        if not prefix and key in CONDITIONS:
            continue  # the camera's measured limits: the status line says what they mean (bot/pipelines/limits.py)
        name = f"{prefix}{key}"
        if isinstance(val, dict) and depth < 2:
            yield from _flatten(val, f"{name}.", depth + 1)
        else:
            yield name, val


def _small(val: Any) -> str | None:
    """A short text for a scalar or a short list of scalars; None for anything big or binary."""
    if isinstance(val, bool) or val is None:
        return str(val).lower()
    if isinstance(val, int):
        return str(val)
    if isinstance(val, float):
        return f"{val:.3g}"
    if isinstance(val, str):
        return val if len(val) <= MAX_STR else val[: MAX_STR - 1] + "…"
    if isinstance(val, (list, tuple)) and len(val) <= 5 and all(isinstance(v, (int, float, str, bool)) for v in val):
        parts = [_small(v) or "" for v in val]
        text = "[" + ", ".join(parts) + "]"
        return text if len(text) <= MAX_STR else None
    return None


def _is_line_count(key: str) -> bool:
    leaf = key.rsplit(".", 1)[-1]
    return leaf in ("count_in", "count_out")


def values_text(values: dict[str, Any], max_values: int = MAX_VALUES) -> str:
    """Line counts first, then up to max_values other small values, `key=value` separated by commas."""
    flat = [(k, _small(v)) for k, v in _flatten(values)]
    flat = [(k, v) for k, v in flat if v is not None]
    lines = [f"{k}={v}" for k, v in flat if _is_line_count(k)]
    others = [f"{k}={v}" for k, v in flat if not _is_line_count(k)]
    extra = f", +{len(others) - max_values} more" if len(others) > max_values else ""
    return ", ".join(lines + others[:max_values]) + extra


def _ids_text(ids: Sequence[int], max_ids: int = MAX_IDS) -> str:
    shown = ", ".join(str(i) for i in ids[:max_ids])
    return shown + (f" +{len(ids) - max_ids} more" if len(ids) > max_ids else "")


def detections_text(result: InferenceResult, max_classes: int = MAX_CLASSES) -> str:
    """'3 detections: 2 person (0.92, 0.87), 1 car (0.76)' — classes by count, top confidences each."""
    if not result.detections:
        return "no detections"
    by_class: dict[str, list[float]] = {}
    for det in result.detections:
        by_class.setdefault(det.class_name, []).append(det.confidence)
    ordered = sorted(by_class.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    parts = []
    confs_shown = MAX_CONFS if max_classes >= MAX_CLASSES else 1
    for name, confs in ordered[:max_classes]:
        top = ", ".join(f"{c:.2f}" for c in sorted(confs, reverse=True)[:confs_shown])
        parts.append(f"{len(confs)} {name[:MAX_STR]} ({top})")
    if len(ordered) > max_classes:
        parts.append(f"+{len(ordered) - max_classes} more classes")
    n = len(result.detections)
    return f"{n} detection{'s' if n != 1 else ''}: " + ", ".join(parts)


def zone_text(results: Sequence[InferenceResult], max_objects: int = MAX_IDS) -> str:
    """'person #12 34 s, car #3 8 s': each object's longest time in the zone (time_in_zone step), longest first."""
    longest: dict[tuple[str, int | None], float] = {}
    for r in results:
        for d in r.detections:
            if d.time_in_zone:
                key = (d.class_name, d.tracker_id)
                longest[key] = max(d.time_in_zone, longest.get(key, 0.0))
    ranked = sorted(longest.items(), key=lambda kv: -kv[1])
    shown = ", ".join(f"{c[:MAX_STR]}{f' #{t}' if t is not None else ''} {secs:.0f} s" for (c, t), secs in ranked[:max_objects])
    return shown + (f" +{len(ranked) - max_objects} more" if len(ranked) > max_objects else "")


# (classes, tracker ids, values) shown, from generous to tight: the first that fits the budget wins
_LEVELS = ((MAX_CLASSES, MAX_IDS, MAX_VALUES), (4, 8, 4), (3, 5, 3), (2, 3, 2), (1, 2, 1))


def _fit(build) -> str:
    """The most detailed build(classes, ids, values) text within MAX_TOKENS, hard-truncated as a last resort."""
    for level in _LEVELS:
        text = build(*level)
        if estimate_tokens(text) <= MAX_TOKENS:
            return text
    while estimate_tokens(text) > MAX_TOKENS:
        text = text[: int(len(text) * 0.9)].rstrip() + "…"
    return text


def summarize(result: InferenceResult, label: str = "") -> str:
    """One frame/image: 'cam1 frame #12 (640x480): 2 detections: 2 person (0.92, 0.87). Tracker ids: 1, 4.'"""
    head = " ".join(p for p in (label, f"frame #{result.frame_id}" if result.frame_id is not None else "") if p)
    size = f" ({result.image_size[0]}x{result.image_size[1]})" if result.image_size else ""
    ids = sorted({d.tracker_id for d in result.detections if d.tracker_id is not None})

    def build(n_classes: int, n_ids: int, n_values: int) -> str:
        parts = [f"{head or 'Image'}{size}: {detections_text(result, n_classes)}."]
        values = values_text(result.values, n_values)
        if values:
            parts.append(f"Values: {values}.")
        if ids:
            parts.append(f"Tracker ids: {_ids_text(ids, n_ids)}.")
        if zone := zone_text([result], n_ids):
            parts.append(f"In the zone: {zone}.")
        return " ".join(parts)

    return _fit(build)


def summarize_many(results: Sequence[InferenceResult], label: str = "") -> str:
    """Several frames: per-class max/mean counts, unique tracker ids, the latest values (line counts)."""
    prefix = f"{label}: " if label else ""
    if not results:
        return f"{prefix}no results yet."
    frames = sorted(results, key=lambda r: (r.timestamp, r.frame_id or 0))
    per_class = []
    for name in sorted({d.class_name for r in frames for d in r.detections}):
        counts = [r.counts().get(name, 0) for r in frames]
        per_class.append((name, max(counts), sum(counts) / len(counts)))
    per_class.sort(key=lambda t: (-t[2], t[0]))
    ids = sorted({d.tracker_id for r in frames for d in r.detections if d.tracker_id is not None})
    first, last = frames[0], frames[-1]
    span = f" #{first.frame_id}–#{last.frame_id}" if first.frame_id is not None and last.frame_id is not None else ""
    lead = f"{prefix}{len(frames)} frame{'s' if len(frames) != 1 else ''}{span} over {last.timestamp - first.timestamp:.1f}s."

    def build(n_classes: int, n_ids: int, n_values: int) -> str:
        parts = [lead]
        if per_class:
            shown = "; ".join(f"{n[:MAX_STR]} max {mx} mean {mean:.1f}" for n, mx, mean in per_class[:n_classes])
            more = f"; +{len(per_class) - n_classes} more classes" if len(per_class) > n_classes else ""
            parts.append(f"Per frame: {shown}{more}.")
        else:
            parts.append("No detections.")
        values = values_text(last.values, n_values)
        if values:
            parts.append(f"Latest: {values}.")
        if ids:
            parts.append(f"Unique tracker ids ({len(ids)}): {_ids_text(ids, n_ids)}.")
        if zone := zone_text(frames, n_ids):
            parts.append(f"Longest in the zone: {zone}.")
        parts.append(f"Latest frame: {detections_text(last, n_classes)}.")
        return " ".join(parts)

    return _fit(build)
