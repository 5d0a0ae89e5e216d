"""The counting line and its in/out figures drawn to stand out on any picture (block vision_agent/line_overlay@v1).

roboflow_core/line_counter_visualization@v1 adds its colour onto the picture (cv2.addWeighted), so its line fades
on white and black adds nothing, and its label is one fixed size whatever the frame. Here a bright line is painted
over a dark outline (one of the two contrasts with any background) and the in/out box is sized from the frame's
width and put where it hides least: off the line, then over as little of the detections as any edge or corner of the
frame allows, then as far from the line and them as it can be. (It sat by the line's first point: on a 320x180
sub-stream, a third of the width wide, it hid the people at the top end of the line.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import cv2
import numpy as np
import supervision as sv
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    IMAGE_KIND,
    INTEGER_KIND,
    LIST_OF_VALUES_KIND,
    OBJECT_DETECTION_PREDICTION_KIND,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.boxes import overlap
from bot.backends.builtin.drawing_block import DrawingManifest, drawn, visualization_card
from bot.backends.builtin.line_counter import _points

LINE_BGR, OUTLINE_BGR = (255, 0, 255), (0, 0, 0)  # magenta on black: one of the two contrasts with any pixel
TEXT_BGR, BOX_BGR = (255, 255, 255), (32, 32, 32)
FONT = cv2.FONT_HERSHEY_SIMPLEX
TEXT_HEIGHT_SHARE = 1 / 25  # of the frame's width: readable in a Slack preview at 320 px and at 1920 px
BOX_WIDTH_SHARE = 1 / 3  # of the frame's width at most, so the box never hides the scene


class LineOverlayManifest(DrawingManifest):
    type: Literal["vision_agent/line_overlay@v1"]
    model_config = ConfigDict(json_schema_extra=visualization_card(
        "Line Overlay (high contrast)", "Draw a counting line and its in/out counts, visible on any background.",
        "Paints the line bright over a dark outline (opaque, unlike line_counter_visualization's blend, which "
        "fades on white) and the in/out counts in a dark box whose size follows the frame's width (text about "
        "1/25 of it, the box at most 1/3), kept inside the frame at the edge or corner clear of the line that "
        "covers least of the detections given.",
        "far fa-arrow-down-up-across-line"))
    image: Selector(kind=[IMAGE_KIND]) = Field(description="The frame to draw on.", examples=["$inputs.image"])
    line_segment: list | Selector(kind=[LIST_OF_VALUES_KIND]) = Field(
        description="Two [x, y] points in pixels, the counted line.", examples=[[[320, 0], [320, 480]]])
    count_in: int | Selector(kind=[INTEGER_KIND]) = Field(
        default=0, description="Objects counted in.", examples=["$steps.line_counter.count_in"])
    count_out: int | Selector(kind=[INTEGER_KIND]) = Field(
        default=0, description="Objects counted out.", examples=["$steps.line_counter.count_out"])
    predictions: Selector(kind=[OBJECT_DETECTION_PREDICTION_KIND]) | None = Field(
        default=None, description="Detections the in/out box should not hide (it goes where it covers least of them).",
        examples=["$steps.tracker.tracked_detections"])


class LineOverlayBlockV1(WorkflowBlock):
    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return LineOverlayManifest

    def run(self, image: WorkflowImageData, line_segment: list, count_in: int, count_out: int,
            predictions: sv.Detections | None = None) -> BlockResult:
        scene = image.numpy_image.copy()
        avoid = predictions.xyxy.tolist() if predictions is not None and len(predictions) else []
        return drawn(image, draw_line_overlay(scene, _points(line_segment), int(count_in), int(count_out), avoid))


def line_width(frame_width: int) -> int:
    """The bright line's thickness: 3 px at 640 wide, 9 at 1920, never under 2."""
    return max(2, round(frame_width / 213))


def line_reach(frame_width: int) -> int:
    """How far from the line's centre its drawn pixels go: half the dark outline, plus its anti-aliased edge."""
    core = line_width(frame_width)
    return (core + 2 * max(1, core // 2) + 1) // 2 + 1


Box = Sequence[float]  # x1, y1, x2, y2 in pixels


def draw_line_overlay(scene: np.ndarray, line: tuple[tuple[float, float], tuple[float, float]],
                      count_in: int, count_out: int, avoid: Sequence[Box] = ()) -> np.ndarray:
    """The line (dark outline, bright core) and the in/out box, drawn on scene in place; returns scene. The box
    goes where it hides least of the line and of the boxes in `avoid` (the detections on this frame)."""
    height, width = scene.shape[:2]
    start, end = (tuple(int(round(v)) for v in p) for p in line)
    core = line_width(width)
    cv2.line(scene, start, end, OUTLINE_BGR, core + 2 * max(1, core // 2), cv2.LINE_AA)
    cv2.line(scene, start, end, LINE_BGR, core, cv2.LINE_AA)
    _draw_counts(scene, (start, end), [f"in: {count_in}", f"out: {count_out}"], avoid)
    return scene


def _draw_counts(scene: np.ndarray, line: tuple[tuple[int, ...], tuple[int, ...]], lines: list[str],
                 avoid: Sequence[Box]) -> None:
    """The figures one per line in a dark box, text ~1/25 of the width, box ≤ 1/3 of it, inside the frame, placed
    by `count_box_place`."""
    height, width = scene.shape[:2]
    (unit_w, unit_h), _ = cv2.getTextSize(max(lines, key=len), FONT, 1.0, 1)
    scale = width * TEXT_HEIGHT_SHARE / unit_h
    pad = max(2, round(width / 160))
    scale = min(scale, (width * BOX_WIDTH_SHARE - 2 * pad) / unit_w)  # long figures shrink, the box stays ≤ 1/3
    thickness = max(1, round(scale * 1.5))
    sizes = [cv2.getTextSize(text, FONT, scale, thickness) for text in lines]
    text_h = max(size[0][1] + size[1] for size in sizes)
    box_w = max(size[0][0] for size in sizes) + 2 * pad
    box_h = len(lines) * text_h + (len(lines) + 1) * pad
    left, top = count_box_place((width, height), (box_w, box_h), line, avoid, margin=pad)
    cv2.rectangle(scene, (left, top), (left + box_w - 1, top + box_h - 1), BOX_BGR, cv2.FILLED)
    cv2.rectangle(scene, (left, top), (left + box_w - 1, top + box_h - 1), LINE_BGR, max(1, pad // 3))
    for i, ((_, baseline), text) in enumerate(zip(sizes, lines, strict=True)):
        y = top + pad + (i + 1) * text_h + i * pad - baseline
        cv2.putText(scene, text, (left + pad, y), FONT, scale, TEXT_BGR, thickness, cv2.LINE_AA)


def count_box_place(frame: tuple[int, int], box: tuple[int, int], line: Sequence[Sequence[float]],
                    avoid: Sequence[Box] = (), margin: int = 2) -> tuple[int, int]:
    """(left, top) of a box-sized rectangle inside the frame: of its four corners and four edge middles (`margin`
    in from the edges), the one clear of the line's drawn pixels, then covering the least area of `avoid`, then
    farthest from the line; the earlier of equals (top-left first), so it stays put while no one walks into it."""
    (width, height), (box_w, box_h) = frame, box
    xs = sorted({_fit(margin, box_w, width), _fit((width - box_w) // 2, box_w, width),
                 _fit(width - box_w - margin, box_w, width)})
    ys = sorted({_fit(margin, box_h, height), _fit((height - box_h) // 2, box_h, height),
                 _fit(height - box_h - margin, box_h, height)})
    middle = (xs[len(xs) // 2], ys[len(ys) // 2]) if len(xs) == 3 and len(ys) == 3 else None
    reach = line_reach(width) + max(1, margin // 3)  # the line's outline and the box's own border
    best: tuple[tuple[bool, float, float], tuple[int, int]] | None = None
    for top in ys:
        for left in xs:
            if (left, top) == middle:
                continue  # the frame's centre: where the scene is
            rect = (left, top, left + box_w - 1, top + box_h - 1)
            gap = _segment_gap(rect, line)
            covered = sum(overlap(rect, b) for b in avoid)
            # Then the farthest from the line alone: it does not move, so neither does the box while no one walks
            # into it (ranking by the nearest person too made it hop corners from frame to frame in a clip).
            key = (gap < reach, covered, -gap)
            if best is None or key < best[0]:
                best = (key, (left, top))
    assert best is not None
    return best[1]


def _fit(start: int, size: int, room: int) -> int:
    return int(np.clip(start, 0, max(0, room - size)))


def _segment_gap(rect: Box, line: Sequence[Sequence[float]]) -> float:
    """The shortest distance from the line segment to the rectangle (0 where they meet)."""
    left, top, right, bottom = (int(v) for v in rect)
    a, b = (tuple(int(round(v)) for v in p) for p in line[:2])
    if cv2.clipLine((left, top, right - left + 1, bottom - top + 1), a, b)[0]:
        return 0.0
    corners = [(left, top), (right, top), (right, bottom), (left, bottom)]
    edges = list(zip(corners, corners[1:] + corners[:1], strict=True))
    return min([_point_gap(c, a, b) for c in corners] + [_point_gap(p, u, v) for p in (a, b) for u, v in edges])


def _point_gap(p: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float:
    ax, ay, bx, by = a[0], a[1], b[0], b[1]
    dx, dy = bx - ax, by - ay
    length = dx * dx + dy * dy
    t = 0.0 if length == 0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / length))
    return math.hypot(p[0] - (ax + t * dx), p[1] - (ay + t * dy))
