"""A person HOG just found, followed into the next frame by their own picture instead of another HOG scan.

HOG is ~90 % of a busy camera's CPU, and at 4 fps and up a walker moves a fraction of their height between frames.
A person HOG found in two frames running (so not a one-frame stray hit: leaves in the wind), with no one else
within a step (two who walk together or cross paths may swap places in a match), leaves a small grey picture of
themselves; in the next frame, if it came soon enough in a clear picture (people_scale.close), that picture is
looked for within a step's reach. Found there clearly (well matched, and no second place nearly as good: a crowd or a
repeating texture) and where something moved, the box is carried: HOG scans neither it nor the moving blob it
explains. A carried box leaves no picture, so the frame after, HOG looks again: nothing is carried twice running, a
false find lives at most one frame longer, and a person who turns, is hidden or stops is re-found by the detector.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import supervision as sv

from bot.backends.builtin.people_scale import RESCAN_SECONDS, CameraState, apart, centres_in, close, inside

SHRINK = 0.5  # the match runs on a half-size grey copy (a walker's picture of ~50x20 px: well under a millisecond)
REACH = (0.3, 0.15)  # where to look: shares of the person's height each side / above and below (a run at 4 fps)
MATCH = 0.7  # normalised correlation the best place needs
CLEAR = 0.1  # ... and by how much it must beat any other place (beyond the best's own neighbourhood)
MOVED = 0.3  # share of the carried box that lies in moving regions (a match on still background is no walker)
EXPLAINED = 0.8  # a moving region this much inside carried boxes (with their margins) is not scanned again
SAME = 0.3  # IoU at which a find is the same person as a box of the frame before
_MIN_PX = 8  # a picture smaller than this (on the half-size copy) matches anything


@dataclass
class Patch:
    """A person HOG found: the box (frame px), its confidence, the grey picture, the video time it was taken and
    the frame's size then (a stream that changes size mid-way starts afresh)."""

    box: np.ndarray
    confidence: float
    image: np.ndarray
    clock: float
    shape: tuple[int, int]


def _grey(frame: np.ndarray) -> np.ndarray:
    small = cv2.resize(frame, None, fx=SHRINK, fy=SHRINK, interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(small, cv2.COLOR_BGR2GRAY) if small.ndim == 3 else small


def _clip(box: np.ndarray, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (np.asarray(box, np.float64) * SHRINK).round().astype(int)
    return max(0, x1), max(0, y1), min(shape[1], x2), min(shape[0], y2)


def _find(patch: Patch, grey: np.ndarray) -> np.ndarray | None:
    """The patch's box moved to where its picture is in `grey` (half-size), or None: not there, or not clearly."""
    x1, y1, x2, y2 = _clip(patch.box, grey.shape)
    h, w = patch.image.shape
    if h < _MIN_PX or w < _MIN_PX or (y2 - y1, x2 - x1) != (h, w):
        return None
    dx, dy = int(REACH[0] * h) + 1, int(REACH[1] * h) + 1
    sx1, sy1 = max(0, x1 - dx), max(0, y1 - dy)
    area = grey[sy1:min(grey.shape[0], y2 + dy), sx1:min(grey.shape[1], x2 + dx)]
    if area.shape[0] <= h or area.shape[1] <= w:
        return None
    scores = cv2.matchTemplate(area, patch.image, cv2.TM_CCOEFF_NORMED)
    _, best, _, (bx, by) = cv2.minMaxLoc(scores)
    if not best >= MATCH:  # also NaN; a flat picture matches everywhere alike, which CLEAR turns down
        return None
    # Any other place as good is a second person alike, or a texture: not clear which is this one.
    rx, ry = max(2, w // 4), max(2, h // 4)
    scores[max(0, by - ry):by + ry + 1, max(0, bx - rx):bx + rx + 1] = -1.0
    if scores.max() > best - CLEAR:
        return None
    shift = np.array([sx1 + bx - x1, sy1 + by - y1] * 2, np.float32) / SHRINK
    height, width = grey.shape[0] / SHRINK, grey.shape[1] / SHRINK
    return np.clip(patch.box + shift, 0, [width, height, width, height]).astype(np.float32)


def carry(state: CameraState, frame: np.ndarray, now: float | None, regions: list[tuple[int, int, int, int]],
          poor: bool) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int, int]]]:
    """(carried boxes, their confidences, the moving regions left to scan) for this frame; the patches are used up.
    Nothing is carried on a whole-frame rescan, nor from a patch taken too long ago or in a poor picture (light.py;
    people_scale.close)."""
    patches, state.patches = state.patches, []
    none = np.zeros((0, 4), np.float32), np.zeros(0, np.float32), regions
    if now is None or not patches or state.since_full >= RESCAN_SECONDS:
        return none
    fresh = [p for p in patches if close(now - p.clock, poor) and p.shape == frame.shape[:2]]
    if not fresh:
        return none
    grey = _grey(frame)
    boxes, confidences = [], []
    for patch in fresh:
        box = _find(patch, grey)
        if box is not None and inside(box, regions) >= MOVED:
            boxes.append(box)
            confidences.append(patch.confidence)
    if not boxes:
        return none
    pad = [np.asarray(b) + np.array([-1, -1, 1, 1]) * REACH[1] * (b[3] - b[1]) for b in boxes]
    left = [r for r in regions if inside(r, pad) < EXPLAINED]
    return np.asarray(boxes, np.float32), np.asarray(confidences, np.float32), left


def unscanned(carried: np.ndarray, last_boxes: np.ndarray) -> np.ndarray:
    """The last frame's boxes that no carried box follows (HOG scans around these)."""
    if len(carried) == 0 or len(last_boxes) == 0:
        return last_boxes
    return last_boxes[sv.box_iou_batch(last_boxes, carried).max(axis=1) < SAME]


def fresh_only(carried: np.ndarray, confidences: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Carried boxes HOG did not find again this frame anyway (its find wins: it is this frame's). A carried box
    whose centre lies in a find is that person too, however little they overlap (a match off by half a width)."""
    if len(carried) == 0 or len(found) == 0:
        return carried, confidences
    keep = (sv.box_iou_batch(carried, found).max(axis=1) < SAME) & ~centres_in(carried, found).any(axis=1)
    return carried[keep], confidences[keep]


def remember(state: CameraState, frame: np.ndarray, now: float | None, boxes: np.ndarray, confidences: np.ndarray,
             carried: np.ndarray, before: np.ndarray) -> None:
    """Keep a picture of each person HOG found this frame (`boxes` less the `carried` ones) who was also there the
    frame `before` (found or carried): the next frame may carry them."""
    if now is None or len(boxes) == 0 or len(before) == 0:
        return
    hog = ~(sv.box_iou_batch(boxes, carried).max(axis=1) >= 0.99) if len(carried) else np.ones(len(boxes), bool)
    seen = sv.box_iou_batch(boxes, before).max(axis=1) >= SAME
    grey = None
    chosen = hog & seen & apart(boxes)
    for box, confidence in zip(boxes[chosen], confidences[chosen], strict=True):
        grey = _grey(frame) if grey is None else grey
        x1, y1, x2, y2 = _clip(box, grey.shape)
        if y2 - y1 >= _MIN_PX and x2 - x1 >= _MIN_PX:
            state.patches.append(Patch(box.copy(), float(confidence), grey[y1:y2, x1:x2].copy(), now,
                                       (frame.shape[0], frame.shape[1])))
