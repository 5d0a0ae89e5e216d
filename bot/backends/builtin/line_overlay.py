"""The counting line and its in/out figures drawn to stand out on any picture (block vision_agent/line_overlay@v1).

roboflow_core/line_counter_visualization@v1 adds its colour onto the picture (cv2.addWeighted), so its line fades
on white and black adds nothing, and its label is one fixed size whatever the frame. Here a bright line is painted
over a dark outline (one of the two contrasts with any background) and the in/out box is sized from the frame's
width and kept inside the frame.
"""

from __future__ import annotations

from typing import Literal

import cv2
import numpy as np
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    IMAGE_KIND,
    INTEGER_KIND,
    LIST_OF_VALUES_KIND,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

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
        "1/25 of it, the box at most 1/3), kept inside the frame near the line's first point.",
        "far fa-arrow-down-up-across-line"))
    image: Selector(kind=[IMAGE_KIND]) = Field(description="The frame to draw on.", examples=["$inputs.image"])
    line_segment: list | Selector(kind=[LIST_OF_VALUES_KIND]) = Field(
        description="Two [x, y] points in pixels, the counted line.", examples=[[[320, 0], [320, 480]]])
    count_in: int | Selector(kind=[INTEGER_KIND]) = Field(
        default=0, description="Objects counted in.", examples=["$steps.line_counter.count_in"])
    count_out: int | Selector(kind=[INTEGER_KIND]) = Field(
        default=0, description="Objects counted out.", examples=["$steps.line_counter.count_out"])


class LineOverlayBlockV1(WorkflowBlock):
    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return LineOverlayManifest

    def run(self, image: WorkflowImageData, line_segment: list, count_in: int, count_out: int) -> BlockResult:
        scene = image.numpy_image.copy()
        return drawn(image, draw_line_overlay(scene, _points(line_segment), int(count_in), int(count_out)))


def line_width(frame_width: int) -> int:
    """The bright line's thickness: 3 px at 640 wide, 9 at 1920, never under 2."""
    return max(2, round(frame_width / 213))


def draw_line_overlay(scene: np.ndarray, line: tuple[tuple[float, float], tuple[float, float]],
                      count_in: int, count_out: int) -> np.ndarray:
    """The line (dark outline, bright core) and the in/out box, drawn on scene in place; returns scene."""
    height, width = scene.shape[:2]
    start, end = (tuple(int(round(v)) for v in p) for p in line)
    core = line_width(width)
    cv2.line(scene, start, end, OUTLINE_BGR, core + 2 * max(1, core // 2), cv2.LINE_AA)
    cv2.line(scene, start, end, LINE_BGR, core, cv2.LINE_AA)
    _draw_counts(scene, start, [f"in: {count_in}", f"out: {count_out}"])
    return scene


def _draw_counts(scene: np.ndarray, anchor: tuple[int, ...], lines: list[str]) -> None:
    """The figures one per line in a dark box by anchor, text ~1/25 of the width, box ≤ 1/3 of it, inside the frame."""
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
    left = int(np.clip(anchor[0] + pad, 0, max(0, width - box_w)))  # beside the line's start, never off the frame
    top = int(np.clip(anchor[1] + pad, 0, max(0, height - box_h)))
    cv2.rectangle(scene, (left, top), (left + box_w - 1, top + box_h - 1), BOX_BGR, cv2.FILLED)
    cv2.rectangle(scene, (left, top), (left + box_w - 1, top + box_h - 1), LINE_BGR, max(1, pad // 3))
    for i, ((_, baseline), text) in enumerate(zip(sizes, lines, strict=True)):
        y = top + pad + (i + 1) * text_h + i * pad - baseline
        cv2.putText(scene, text, (left + pad, y), FONT, scale, TEXT_BGR, thickness, cv2.LINE_AA)

