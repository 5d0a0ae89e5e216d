"""How alerts and the observation timeline name what was seen: '2 people', 'person #12', '1 car, 3 people'."""

from __future__ import annotations

from bot.backends.base import Detection

# Detector class names that do not take a plain -s: what a person reads in an alert must be English.
_IRREGULAR = {"person": "people", "man": "men", "woman": "women", "child": "children", "motion": "moving areas",
              "bus": "buses", "mouse": "mice", "sheep": "sheep"}
_SINGULAR = {"motion": "moving area"}


def plural(name: str, n: int) -> str:
    """'1 person', '2 people', '3 cars', '2 moving areas' (the class names detectors use)."""
    if n == 1:
        return f"1 {_SINGULAR.get(name, name)}"
    if name in _IRREGULAR:
        return f"{n} {_IRREGULAR[name]}"
    if name.endswith(("s", "x", "ch", "sh")):
        return f"{n} {name}es"
    return f"{n} {name}s"


def in_view(comparison: str, threshold: float, name: str | None) -> str:
    """'more than 3 people are in view', 'fewer than 1 person is in view': the one wording of a count condition, its
    class and verb agreed with the number (rules and watches alike)."""
    one = threshold == 1
    noun = plural(name or "object", 1 if one else 2).split(" ", 1)[1]
    return f"{comparison} {threshold:g} {noun} {'is' if one else 'are'} in view"


def class_of(label: str) -> str:
    """The class name behind a counted label: 'people' -> 'person', 'cars' -> 'car' (plural's inverse)."""
    for cls, many in _IRREGULAR.items():
        if label in (cls, many, _SINGULAR.get(cls)):
            return cls
    if label.endswith(("ses", "xes", "ches", "shes")):
        return label[:-2]
    return label[:-1] if label.endswith("s") and not label.endswith("ss") else label


def describe_counts(counts: dict[str, int]) -> str:
    """'2 people, 1 car' (largest first), or 'nothing' for an empty frame."""
    seen = sorted(((n, c) for c, n in counts.items() if n > 0), key=lambda nc: (-nc[0], nc[1]))
    return ", ".join(plural(c, n) for n, c in seen) or "nothing"


def classes(counts: dict[str, int]) -> str:
    """'person', 'person and car', 'person, car and dog': the classes present, largest count first."""
    names = [c for c, n in sorted(counts.items(), key=lambda cn: (-cn[1], cn[0])) if n > 0]
    if len(names) <= 1:
        return names[0] if names else "object"
    return ", ".join(names[:-1]) + " and " + names[-1]


def object_name(d: Detection) -> str:
    """'person #12' for a tracked object, 'person' otherwise."""
    name = _SINGULAR.get(d.class_name, d.class_name)
    return f"{name} #{d.tracker_id}" if d.tracker_id is not None else name
