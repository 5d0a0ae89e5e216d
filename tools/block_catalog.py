"""Compact views of the workflow block catalogue (the backend's describe output) for the discovery tools."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

CATEGORIES = (
    "model", "analytics", "visualization", "transformation", "sink",
    "flow_control", "classical_cv", "fusion", "tracking",
)
# describe's block_type / ui_manifest.section -> one of CATEGORIES
_TYPE_MAP = {
    "classical_computer_vision": "classical_cv", "formatter": "transformation", "math": "transformation",
    "video": "analytics", "secrets_provider": "sink", "classical_cv": "classical_cv", "data_storage": "sink",
    "notifications": "sink",
}
_SKIP_PROPS = {"type", "name"}
_VERSION = re.compile(r"^(?P<base>.+?)@v(?P<n>\d+)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`'\"])")
SHORT_CHARS, INPUT_CHARS = 160, 320  # budgets in whole sentences: the first sentence is always kept whole
# What inference's own descriptions leave out or get backwards, for the inputs that decide whether counting works
# (measured on real CCTV: bench/line_count.py). Keyed by block family (no @vN) and input name.
PARAM_NOTES: dict[tuple[str, str], str] = {
    ("roboflow_core/line_counter", "triggering_anchor"): (
        "Unset means all four box corners must cross, which loose or flickering boxes rarely do (0 counted where "
        "~30 people crossed): set BOTTOM_CENTER for people (their feet), CENTER for other objects."),
    ("roboflow_core/byte_tracker", "minimum_matching_threshold"): (
        "In ByteTrack this is the largest 1 - IoU a match may have, so higher is looser: 0.9-0.95 keeps ids on "
        "low-fps CCTV where a box moves far between processed frames."),
    ("roboflow_core/byte_tracker", "lost_track_buffer"): (
        "Counted in 1/30 s whatever the video's fps (30 = keep a lost track for 1 s); 60-90 bridges a detector "
        "missing someone for a second or two."),
}


def block_id(block: dict[str, Any]) -> str:
    return str(block.get("manifest_type_identifier") or block.get("type") or block.get("block_type_id") or "")


def _schema(block: dict[str, Any]) -> dict[str, Any]:
    return block.get("block_schema") or block.get("schema") or {}


def clip_sentences(text: Any, limit: int) -> str:
    """Whole sentences of text up to limit characters (the first always whole), so nothing stops mid-sentence."""
    sentences = _SENTENCE_END.split(" ".join(str(text or "").split()))
    out = sentences[0]
    for sentence in sentences[1:]:
        if len(out) + 1 + len(sentence) > limit:
            break
        out += " " + sentence
    return out


def short_description(block: dict[str, Any]) -> str:
    schema = _schema(block)
    text = schema.get("short_description") or block.get("description") or block.get("human_friendly_block_name") or ""
    return clip_sentences(text, SHORT_CHARS)


def input_description(block: dict[str, Any], name: str, prop: dict[str, Any]) -> str:
    """An input's description in whole sentences, plus our note where inference's own misleads (PARAM_NOTES)."""
    text = clip_sentences(prop.get("description"), INPUT_CHARS)
    m = _VERSION.match(block_id(block))
    note = PARAM_NOTES.get((m["base"] if m else block_id(block), name))
    return f"{text} Note: {note}".strip() if note else text


def categories(block: dict[str, Any]) -> set[str]:
    """The CATEGORIES of a block: from its block_type, its UI section, and 'tracking' for trackers."""
    schema = _schema(block)
    raw = [schema.get("block_type") or block.get("block_type") or block.get("category"),
           (schema.get("ui_manifest") or {}).get("section")]
    cats = {_TYPE_MAP.get(r, r) for r in raw if r}
    if "track" in block_id(block).lower():
        cats.add("tracking")
    return {c for c in cats if c in CATEGORIES} or {"transformation"}


def latest_versions(blocks: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[str]]]:
    """One entry per block family (newest @vN), with the older versions' names."""
    families: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for b in blocks:
        m = _VERSION.match(block_id(b))
        base, n = (m["base"], int(m["n"])) if m else (block_id(b), 0)
        families.setdefault(base, []).append((n, b))
    out = []
    for versions in families.values():
        versions.sort(key=lambda t: t[0], reverse=True)
        out.append((versions[0][1], [f"v{n}" for n, _ in versions[1:] if n]))
    return sorted(out, key=lambda t: block_id(t[0]))


def find_block(blocks: list[dict[str, Any]], wanted: str) -> dict[str, Any] | None:
    wanted_l = wanted.strip().lower()
    for b in blocks:
        names = [block_id(b), *(b.get("manifest_type_identifier_aliases") or [])]
        if wanted_l in (n.lower() for n in names):
            return b
    return None


def suggestions(blocks: list[dict[str, Any]], wanted: str, n: int = 5) -> list[str]:
    ids = [block_id(b) for b in blocks]
    close = difflib.get_close_matches(wanted, ids, n=n, cutoff=0.4)
    return close or [i for i in ids if wanted.split("@")[0].split("/")[-1] in i][:n]


def _kinds(prop: Any) -> list[str]:
    """Kind names (and plain JSON types) a property accepts, found anywhere in its schema."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k in node.get("kind") or []:
                if isinstance(k, dict) and k.get("name") and k["name"] not in found:
                    found.append(k["name"])
            t = node.get("type")
            if isinstance(t, str) and t not in found and not node.get("reference"):
                found.append(t)
            for key in ("anyOf", "oneOf", "allOf", "items"):
                walk(node.get(key))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(prop)
    return found


def _placeholder(name: str, prop: dict[str, Any]) -> Any:
    kinds = _kinds(prop)
    if "image" in kinds or name in ("image", "images"):
        return "$inputs.image"
    if any(k.endswith("_prediction") for k in kinds):
        return "$steps.<model_step>.predictions"
    examples = prop.get("examples")
    if examples:
        return examples[0]
    if "default" in prop:
        return prop["default"]
    return f"<{name}>"


def details(block: dict[str, Any]) -> str:
    """Inputs (required first), outputs with kinds, and a minimal example step, in a few hundred tokens."""
    schema = _schema(block)
    props: dict[str, Any] = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r not in _SKIP_PROPS]
    lines = [f"{block_id(block)} — {block.get('human_friendly_block_name') or ''}".rstrip(" —"),
             f"Category: {', '.join(sorted(categories(block)))}. {short_description(block)}", "Inputs:"]
    ordered = required + sorted(p for p in props if p not in required and p not in _SKIP_PROPS)
    for name in ordered[:25]:
        prop = props.get(name) or {}
        desc = input_description(block, name, prop)
        default = f", default {json.dumps(prop['default'])[:30]}" if "default" in prop else ""
        req = " (required)" if name in required else default
        lines.append(f"- {name}{req} [{', '.join(_kinds(prop)[:4])}]: {desc}")
    if len(ordered) > 25:
        lines.append(f"- … {len(ordered) - 25} more optional inputs")
    outputs = block.get("outputs_manifest") or block.get("outputs") or []
    lines.append("Outputs: " + ("; ".join(
        f"{o.get('name')} [{', '.join(k.get('name', '') if isinstance(k, dict) else str(k) for k in o.get('kind') or [])}]"
        for o in outputs) or "none listed"))
    step = {"type": block_id(block), "name": "step_1"}
    step.update({name: _placeholder(name, props.get(name) or {}) for name in required})
    lines.append("Example step: " + json.dumps(step))
    return "\n".join(lines)
