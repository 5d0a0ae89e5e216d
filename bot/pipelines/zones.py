"""`/vision start … zone=`: a dwell zone from `X1,Y1,X2,Y2,X3,Y3,…` pixels or a zone named in CAMERAS.md."""

from __future__ import annotations

import re

from bot.pipelines.counting_line import MAX_SIDE, split_size

ZONE_HINT = ("zone= takes a polygon X1,Y1,X2,Y2,X3,Y3,... in pixels (at least 3 points, e.g. "
             "zone=100,300,500,300,500,470; add @WIDTHxHEIGHT when measured on a frame of another size) or the name "
             "of a zone in CAMERAS.md's Zones table")
_NUMBERS = re.compile(r"^\s*\d+\s*(?:,\s*\d+\s*)+$")

MAX_POINTS = 64  # a polygon drawn by hand has a handful; thousands would only slow every frame


def parse_polygon(raw: str) -> list[list[int]]:
    """[[x, y], ...] from `X1,Y1,X2,Y2,X3,Y3,...`; ValueError (one line, with the syntax) for anything else."""
    if not _NUMBERS.match(raw):
        raise ValueError(f"{ZONE_HINT}; not {raw!r}.")
    nums = [int(v) for v in raw.split(",")]
    if len(nums) % 2 or not 3 <= len(nums) // 2 <= MAX_POINTS:
        raise ValueError(f"{ZONE_HINT}: an even count of numbers, 3 to {MAX_POINTS} points; not {raw!r}.")
    points = [nums[i : i + 2] for i in range(0, len(nums), 2)]
    if max(nums) > MAX_SIDE:  # past any frame (and past what OpenCV can draw)
        raise ValueError(f"zone= points are pixels, 0 to {MAX_SIDE}, not {raw!r}.")
    if len({(x, y) for x, y in points}) < 3:
        raise ValueError(f"zone= needs at least 3 different points, not {raw!r}.")
    return points


def resolve_zone(raw: str, named: dict[str, str]) -> list[list[int]]:
    """The zone for `zone=raw` as given (its @WIDTHxHEIGHT, if any, is `resolve_zone_sized`'s)."""
    return resolve_zone_sized(raw, named)[0]


def resolve_zone_sized(raw: str, named: dict[str, str]) -> tuple[list[list[int]], tuple[int, int] | None]:
    """(polygon, frame size it was measured on or None) for `zone=raw`: a polygon, or a name from CAMERAS.md
    (case-insensitive; its points may carry @WIDTHxHEIGHT too); ValueError if neither."""
    text, size = split_size(raw)
    if _NUMBERS.match(text):
        return parse_polygon(text), size
    by_name = {name.lower(): (name, points) for name, points in named.items()}
    if raw.strip().lower() not in by_name:
        known = ", ".join(sorted(named)) or "none yet"
        raise ValueError(f"No zone named {raw!r} in CAMERAS.md (zones: {known}); {ZONE_HINT}.")
    name, points = by_name[raw.strip().lower()]
    try:
        text, size = split_size(points)
        return parse_polygon(text), size
    except ValueError:
        raise ValueError(f"Zone {name!r} in CAMERAS.md has a bad polygon {points!r}; write it as "
                         "X1,Y1,X2,Y2,X3,Y3,... in pixels.") from None
