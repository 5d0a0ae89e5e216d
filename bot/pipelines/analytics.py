"""A model plus `line=` / `zone=` → the detection workflow a pipeline runs (shared by `/vision start` and the tool)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from bot.backends.counting import parse_anchor
from bot.backends.orientation import Orientation
from bot.backends.workflows import detection_workflow
from bot.media.sniff import DEFAULT_MAX_PIXELS
from bot.objects.pipeline import NEEDS_MODEL
from bot.pipelines.counting_line import (
    check_on_frame,
    frame_size,
    middle_line,
    moved_note,
    parse_line,
    past_note,
    probe_size,
    rescale,
    split_size,
)
from bot.pipelines.zones import resolve_zone, resolve_zone_sized


@dataclass(frozen=True)
class Analytics:
    """What a pipeline measures besides detections: a counting line, a dwell zone, and the spec running them."""

    spec: dict[str, Any] | None = None  # None: no line and no zone (the manager wraps the model itself)
    line: list[list[int]] | None = None
    zone: list[list[int]] | None = None
    anchor: str | None = None  # the box point whose crossing counts, when the user chose it
    confidence: float | None = None  # the detector's settings, when the user gave them
    min_height: int | None = None
    moved: str = ""  # where points were moved from, or that they reach past the frame (points of another size)

    def describe(self) -> str:
        """', counting crossings of the line (320,0)→(320,480), timing objects in a 4-point zone' or ''."""
        text = ""
        if self.line:
            (x1, y1), (x2, y2) = self.line
            text += f", counting crossings of the line ({x1},{y1})→({x2},{y2})"
            text += f" by each box's {self.anchor.lower().replace('_', ' ')}" if self.anchor else ""
        if self.zone:
            text += f", timing how long objects stay in a {len(self.zone)}-point zone"
        if self.confidence is not None:
            text += f", keeping detections from confidence {self.confidence:g}"
        if self.min_height is not None:
            text += f", looking for people from {self.min_height} px tall"
        return text + self.moved


def check_syntax(line: str | None, zone: str | None, named_zones: dict[str, str], anchor: str | None = None) -> None:
    """ValueError for a bad line=, zone= or anchor= before any source is opened."""
    if anchor is not None:
        if line is None:
            raise ValueError("anchor= says which point of a box counts as crossing a line: give it with line=.")
        parse_anchor(anchor)
    if line is not None:
        parse_line(line)
    if zone is not None:
        resolve_zone(zone, named_zones)


async def compose(
    model_id: str | None, source: str, line: str | None, zone: str | None, named_zones: dict[str, str],
    anchor: str | None = None, confidence: float | None = None, min_height: int | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS, turned: Orientation | None = None,
) -> Analytics:
    """The workflow for model_id with a line and/or zone (`line=middle` reads one frame of source for its size) and
    the detector settings given; an empty Analytics when there is none of them (the manager wraps the model).

    The frame size is the one the pipeline works on: a source's frames over max_pixels (media.max_pixels) are
    scaled at decode, and points are placed and checked on the scaled frames; a camera `turned` upright has them in
    its upright frame (a quarter turn swaps its width and height)."""
    if line is None and zone is None and confidence is None and min_height is None:
        return Analytics()
    if model_id is None:
        raise ValueError(NEEDS_MODEL)
    check_syntax(line, zone, named_zones, anchor)
    point = parse_anchor(anchor) if anchor is not None else None
    line_points, line_size = (parse_line(line), split_size(line)[1]) if line is not None else (None, None)
    zone_points, zone_size = resolve_zone_sized(zone, named_zones) if zone is not None else (None, None)
    frame = None
    if line is not None and line_points is None:
        frame = await frame_size(source, "place line=middle", max_pixels)
    elif line_size or zone_size:  # points measured on another size: moved onto the frames this source gives
        frame = await frame_size(source, "move points given @WIDTHxHEIGHT onto this stream", max_pixels)
    elif line_points is not None or zone_points is not None:
        # Points read off another frame size without @WxH can miss the picture entirely: check them on a frame
        # (None when the source cannot be read now: the pipeline's start says why).
        frame = await asyncio.to_thread(probe_size, source, max_pixels)
    if frame is not None and turned:
        frame = turned.size(*frame)  # the upright frame the points are in
    if line is not None and line_points is None and frame is not None:
        line_points = middle_line(*frame)
    if line_points is not None:
        line_points = rescale(line_points, line_size, frame)
    if zone_points is not None:
        zone_points = rescale(zone_points, zone_size, frame)
    if frame is not None:
        check_on_frame(line_points, zone_points, frame)
    moved = "".join(moved_note(s, frame) for s in sorted({s for s in (line_size, zone_size) if s is not None}))
    moved += past_note(None if line_size else line_points, None if zone_size else zone_points, frame)
    settings = {"min_height": min_height} if min_height is not None else None
    spec = detection_workflow(model_id, confidence=confidence, line=line_points, zone=zone_points, anchor=point,
                              settings=settings)
    return Analytics(spec, line_points, zone_points, point, confidence, min_height, moved)
