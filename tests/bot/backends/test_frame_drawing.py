"""Frames a person can read, measured in pixels: the counting line on any background, the in/out box and labels
sized to the frame, the camera's resolution kept (issue 23 item 7)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bot.backends.builtin.frame_scale import drawing_sizes
from bot.backends.builtin.line_overlay import BOX_BGR, draw_line_overlay, line_width
from bot.backends.workflows import detection_workflow

DATA = Path(__file__).parents[2] / "fixtures" / "data"
REFS = Path(__file__).parents[2] / "fixtures" / "frames"
SIZES = [(320, 240), (640, 360), (768, 576), (1280, 720), (1920, 1080), (3840, 2160)]
BACKGROUNDS = {"white": (255, 255, 255), "black": (0, 0, 0), "grey": (128, 128, 128), "magenta": (255, 0, 255)}


def contrast_across(before: np.ndarray, after: np.ndarray, row: int, x: int, reach: int) -> int:
    """The most any pixel near x on row changed (sum over B, G, R): how far the drawn line stands from what was there."""
    lo, hi = max(0, x - reach), min(before.shape[1], x + reach + 1)
    return int(np.abs(after[row, lo:hi].astype(int) - before[row, lo:hi].astype(int)).sum(axis=1).max())


def box_of(drawn: np.ndarray) -> tuple[int, int, int, int]:
    """The in/out box's fill: the largest patch of its colour (the line's anti-aliased edge has a few such pixels)."""
    mask = np.all(drawn == BOX_BGR, axis=2).astype(np.uint8)
    _, _, stats, _ = cv2.connectedComponentsWithStats(mask)
    x, y, w, h, _ = stats[1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))]
    return int(x), int(y), int(x + w - 1), int(y + h - 1)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("background", list(BACKGROUNDS))
def test_the_line_contrasts_with_any_background_and_the_box_fits_the_frame(size, background):
    width, height = size
    scene = np.full((height, width, 3), BACKGROUNDS[background], np.uint8)
    for line in ([(width // 2, 0), (width // 2, height)], [(0, height - 1), (width - 1, 0)]):  # middle; corner to corner
        drawn = draw_line_overlay(scene.copy(), line, 12, 3)
        row = height * 3 // 4  # below the box, which sits by the line's start
        x = round(line[0][0] + (line[1][0] - line[0][0]) * (row - line[0][1]) / (line[1][1] - line[0][1]))
        assert contrast_across(scene, drawn, row, x, 2 * line_width(width)) >= 300  # black on white, magenta on black
        left, top, right, bottom = box_of(drawn)
        assert 0 < left and 0 < top and right < width - 1 and bottom < height - 1  # whole, never cut by the edge
        assert width / 10 < right - left + 1 < width / 3  # readable, and never more than a third of the frame


def test_big_counts_shrink_the_text_not_widen_the_box():
    scene = np.zeros((240, 320, 3), np.uint8)
    left, _, right, _ = box_of(draw_line_overlay(scene, [(160, 0), (160, 240)], 123456, 7890))
    assert right - left + 1 < 320 / 3


def test_label_sizes_grow_with_the_frame():
    scales = [drawing_sizes(width) for width, _ in SIZES]
    assert all(a["text_scale"] <= b["text_scale"] for a, b in zip(scales, scales[1:], strict=False))
    assert scales[0]["text_scale"] >= 0.35 and scales[-1]["text_scale"] > 3 * scales[2]["text_scale"] / 2
    assert all(s["text_thickness"] >= 1 and s["thickness"] >= 1 for s in scales)


def street_frame(size: tuple[int, int], index: int = 30) -> np.ndarray:
    cap = cv2.VideoCapture(str(DATA / "vtest_street_60f.mp4"))
    cap.set(cv2.CAP_PROP_POS_FRAMES, index)
    ok, frame = cap.read()
    cap.release()
    assert ok
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


async def render(direct_backend, image: np.ndarray) -> np.ndarray:
    """The frame the real workflow draws for builtin/people with line=middle."""
    height, width = image.shape[:2]
    spec = detection_workflow("builtin/people", line=[[width // 2, 0], [width // 2, height]])
    result = await direct_backend.run_single(cv2.imencode(".png", image)[1].tobytes(), workflow_spec=spec)
    return cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(320, 240), (768, 576)])
async def test_the_real_workflow_draws_a_readable_frame_at_the_cameras_size(direct_backend, size):
    width, height = size
    street = street_frame(size)
    drawn = await render(direct_backend, street)
    assert drawn.shape[:2] == (height, width)  # the camera's resolution, not cut to 640 px
    ref = cv2.imread(str(REFS / f"ref_line_{width}x{height}.jpg"))
    assert np.abs(drawn.astype(int) - ref.astype(int)).mean() < 6  # drawn as the reference a person looked at
    for name, colour in (("white", 255), ("black", 0)):
        plain = np.full((height, width, 3), colour, np.uint8)
        out = await render(direct_backend, plain)
        row = height * 3 // 4
        assert contrast_across(plain, out, row, width // 2, 2 * line_width(width)) >= 300, name
        dark = np.all(np.abs(out.astype(int) - BOX_BGR) < 40, axis=2) if colour else None
        if dark is not None:  # the in/out box on white: under a third of the frame's width
            xs = np.nonzero(dark.any(axis=0))[0]
            assert 0 < xs.max() - xs.min() + 1 < width / 3
