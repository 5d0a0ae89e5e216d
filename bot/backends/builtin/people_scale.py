"""How big people are in this camera and where they move: what builtin/people upscales and scans, per video.

HOG finds a person only at ~96 px tall (its 64x128 window). A fixed upscale fitted to one camera is blind on
another: a 384x288 sub-stream has people 30-100 px tall. So each video keeps a background model on a small copy
of its frames; the heights of moving blobs shaped like a standing person (taller than wide) give the typical
person's height in this camera, and the detector upscales so that people somewhat smaller than that fill its
window. It scans only where something moves or a person was just found (plus the whole frame now and then, for
people standing still), so a small stream costs less than a big one instead of going blind.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from bot.backends.builtin.boxes import area, overlap

MOTION_WIDTH = 320  # px: the background model runs on a copy this wide (or the frame, if narrower)
SAMPLES = 200  # blob heights kept per video (a rolling window: a camera that is moved re-learns)
MIN_SAMPLES = 12  # person-shaped blobs seen before the measured size replaces the default upscale
FIRST_GUESS = 3  # blobs enough for a first guess that may only raise the default upscale (whole-frame scans)
WARMUP_FRAMES = 3  # an empty background model calls everything foreground
RESCAN_SECONDS = 4.0  # the whole frame is scanned this often (people who stand still make no motion)
SMALLEST_SHARE = 0.6  # find people down to this share of the typical height (people further away)
FULL_FRAME_SHARE = 0.5  # regions covering more of the frame than this: scan the whole frame instead
# Room scanned around what moved, in shares of the typical person's height (x: each side, y: above and below).
# A whole person's box: HOG's window is a sixth of the person taller on each end and a third of it wide (64x128 round
# 96 px); 0.25 / 0.2 leave that and a step's travel. On vtest's envelope cells (x0.4-x1.5, 2-10 fps, mirrored) HOG
# scans two thirds of the pixels it did with REGION_PAD everywhere, and each cell matched as many by-eye crossings
# within a second, or one more; 0.2 / 0.15 lost true crossings (x0.5 3 fps: 33 -> 31) and recall (x1 10 fps: 0.74).
PERSON_PAD = (0.25, 0.2)
REGION_PAD = (0.5, 0.35)  # part of a person, or several: room for a whole one beside / above it
TIGHT_FPS = 4.0  # PERSON_PAD from this frame rate (plan)
APART = 0.15  # people closer than twice this share of their height (edge to edge) walk together (carry, fitted)
KNOWN_SHARE = 0.75  # a crop holding only people found last frame: boxes down to this share of the smallest one's height
UPSCALE_CAP = 4.0  # beyond this HOG sees interpolation, not people; and the cost grows with its square
_SPECKS = np.ones((3, 1), np.uint8)  # the mask opening: 3 px tall, 1 wide
SHARE_SECONDS = 30.0  # the share of moments with person-shaped motion in which someone was found: over about this
FOUND_SHARE = 0.25  # under this share a find is a stray hit (an upside-down camera: 1 frame in 12), not sight
GAP_SECONDS = 5.0  # a gap in the video (a camera that reconnected, a clock jump) counts as at most this much time
# with no one found: the gap was not watched (a 90 s jump made a countable night camera 'blind' and rest at once)


@dataclass
class CameraState:
    """One video's background model, the person-shaped blob heights seen, and where people were last found."""

    subtractor: Any = None
    frames: int = 0
    since_full: float = float("inf")  # seconds of video since the last whole-frame scan
    clock: float | None = None  # video time of the previous frame
    held: float = 0.0  # seconds of video a resting camera's detector skipped since it last looked (builtin/light.py)
    heights: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    last_boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))
    person_shaped: bool = False  # this frame's motion had a blob shaped like a standing person
    blind: float = 0.0  # seconds of video with person-shaped motion and no one found, since people were last seen
    found_share: float = 1.0  # of recent moments with person-shaped motion, the share with someone found
    # this frame's person-sized blobs (x1, y1, x2, y2 in frame px, lying: wider than tall), for people_turn.py
    shaped: list[tuple[tuple[int, int, int, int], bool]] = field(default_factory=list)
    patches: list[Any] = field(default_factory=list)  # people found this frame that the next may carry (people_carry)

    def settled(self) -> bool:
        """The height window is full: early blobs (people already in the first frame leave ghosts) have aged out."""
        return len(self.heights) == SAMPLES

    def person_height(self) -> float | None:
        """The typical standing person's height in px (median of person-shaped moving blobs), once measured."""
        if len(self.heights) < MIN_SAMPLES:
            return None
        return float(np.median(np.asarray(self.heights)))


def observe(state: CameraState, frame: np.ndarray, dt: float,
            clean: Callable[[np.ndarray], np.ndarray] | None = None) -> list[tuple[int, int, int, int]]:
    """Feed a frame to the background model; its moving regions (x1, y1, x2, y2 in frame px), heights recorded.
    `clean`: what the small copy goes through first (a dark camera's is brightened: bot/backends/builtin/light.py)."""
    state.frames += 1
    state.since_full += dt
    f = min(1.0, MOTION_WIDTH / frame.shape[1])
    small = cv2.resize(frame, None, fx=f, fy=f, interpolation=cv2.INTER_AREA) if f < 1.0 else frame
    if clean is not None:
        small = clean(small)
    if state.subtractor is None:
        state.subtractor = cv2.createBackgroundSubtractorMOG2(history=50, varThreshold=16, detectShadows=True)
    mask = state.subtractor.apply(small)
    if state.frames <= WARMUP_FRAMES:
        return []
    mask = np.where(mask == 255, 255, 0).astype(np.uint8)  # 127 is shadow: not part of the person's outline
    # Specks go, limbs stay: on the small copy a walker's legs are 1-2 px wide and a square opening erased them,
    # so blobs ended at the hips and read ~0.8 of people's height (0.75 at 24 px tall); a vertical one keeps them.
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, _SPECKS)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((7, 3), np.uint8))  # join a body's parts, head to feet
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    regions = []
    state.person_shaped = False
    state.shaped = []
    for c in contours:
        x, y, w, h = cv2.boundingRect(c)
        area = cv2.contourArea(c)
        if h < 6 or area < 12:
            continue  # noise: a few pixels of flicker
        box = (int(x / f), int(y / f), int((x + w) / f) + 1, int((y + h) / f) + 1)
        if 1.5 <= h / w <= 4.5 and area >= 0.35 * w * h:
            state.heights.append(h / f)  # standing people are 2-4 times taller than wide
            state.person_shaped = True
            state.shaped.append((box, False))
        elif 1.5 <= w / h <= 4.5 and area >= 0.35 * w * h:
            state.shaped.append((box, True))  # the same, lying down: a camera turned a quarter (people_turn.py)
        regions.append(box)
    return regions


def account(state: CameraState, found: int, dt: float) -> None:
    """After the detector ran: how long person-shaped things have moved with no one found (reset by a find, unless
    finds have become stray hits: a flipped camera's walkers gave one every few seconds and were never 'blind')."""
    if state.person_shaped:
        state.found_share += (float(bool(found)) - state.found_share) * min(1.0, dt / SHARE_SECONDS)
    if found and state.found_share >= FOUND_SHARE:
        state.blind = 0.0
    elif state.person_shaped:
        state.blind += dt


def conditions(state: CameraState, smallest_px: float) -> dict[str, float | bool | None]:
    """What this camera's frames say about the detector's reach (the `camera` output; bot/pipelines/limits.py)."""
    typical = state.person_height()
    return {"person_px": None if typical is None else round(typical, 1), "settled": state.settled(),
            "smallest_px": round(smallest_px, 1), "blind_seconds": round(state.blind, 1)}


# A video's first frames, before people are measured: people from this many px (a first guess from what moves raises
# it within seconds). Not the still's budget: scanning a small camera's first frames at 4x cost seconds each, and a
# file's frames were dropped meanwhile (a 240x300 crop of a street whose people are 90 px tall lost 14 of 40).
VIDEO_FIRST_PX = 64


def still_scale(shape: tuple[int, ...], min_height: int | None, side: float, person_px: float) -> float:
    """The upscale of a still image (no frames before or after it to measure people by).

    A picture's size says nothing of how tall its people are (a 384x288 sub-stream and a 12 MP photo both show
    people 5-30 % of their height). So a still is scanned as finely as the detector's bounds allow: upscaled until
    its longer side reaches the budget (`side`, the spec's max_side), never past UPSCALE_CAP. HOG's pyramid then
    scans every smaller scale down from there, so one pass finds people from person_px / scale px tall up to the
    whole frame, at the cost of one budget-sized image: a 192 px still finds people from 24 px (4x), a 384x288 one
    from 29 px (3.3x, what a sub-stream's measured people call for in video), a 12 MP photo from about 300 px
    (scaled down to the budget). min_height, when given, says the smallest person instead (the budget still caps it).
    """
    if min_height is not None:
        return person_px / max(int(min_height), 8)
    return min(UPSCALE_CAP, side / max(shape[0], shape[1]))


def close(interval: float, poor: bool) -> bool:
    """Whether a frame `interval` s of video after another, in a picture not `poor` (light.py), shows each walker
    about where they were: at most 1 / TIGHT_FPS s (a walker moves further than PERSON_PAD between frames at 2 fps)
    and clear (a dark or noisy picture's brightened blobs are ragged). What the tight pad (plan) and carrying
    (people_carry.py) both need."""
    return not poor and 0.0 < interval <= 1.0 / TIGHT_FPS


def plan(state: CameraState, shape: tuple[int, ...], regions: list[tuple[int, int, int, int]],
         default_scale: float, window: tuple[int, int], person_px: float,
         dt: float = 0.0, poor: bool = False) -> tuple[float, list[tuple[int, int, int, int]]]:
    """(upscale, crops to scan): the measured scale once known, over moving regions and last hits, or the frame.
    A whole person's blob or last box gets PERSON_PAD when this frame came at most 1 / TIGHT_FPS s (`dt`) after the
    last (a walker moves further than the pad between frames at 2 fps: a noisy IR sub-stream counted 20 of 16) and
    the picture is not `poor` (dark or noisy, light.py: the brightened copy's blobs are ragged; a noisy night lost 7
    of 66 crossings to the tight pad). Otherwise every region keeps REGION_PAD, as before it."""
    height, width = shape[:2]
    typical = state.person_height()
    whole = [(0, 0, width, height)]
    if typical is None:
        # Still measuring: a few person-shaped blobs already say people are small here; scan the whole frame at
        # the larger of the two upscales so the first seconds of a sub-stream are not blind (never smaller).
        if len(state.heights) < FIRST_GUESS:
            return default_scale, whole
        guess = float(np.median(np.asarray(state.heights)))
        return max(default_scale, float(np.clip(person_px / (SMALLEST_SHARE * guess), 1.0, UPSCALE_CAP))), whole
    scale = float(np.clip(person_px / (SMALLEST_SHARE * typical), window[1] / height, UPSCALE_CAP))
    if state.since_full >= RESCAN_SECONDS:
        state.since_full = 0.0
        return scale, whole
    # A person found last frame, or a blob shaped like one standing person, is a whole person already: a little room
    # around it for HOG's window margins. Any other region may be part of a person (an arm, a torso over a parked
    # car) or several: room for a whole person beside / above it. At least the detector's window either way.
    person = PERSON_PAD if close(dt, poor) else REGION_PAD
    standing = {box for box, lying in state.shaped if not lying}
    boxes = [((int(b[0]), int(b[1]), int(b[2]), int(b[3])), person) for b in state.last_boxes]
    boxes += [(r, person if r in standing else REGION_PAD) for r in regions if r[3] - r[1] >= 0.3 * typical]
    min_w, min_h = window[0] / scale, window[1] / scale
    crops = []
    for (x1, y1, x2, y2), (share_x, share_y) in boxes:
        pad_x, pad_y = share_x * typical, share_y * typical
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        w, h = max(x2 - x1 + 2 * pad_x, min_w + 1), max(y2 - y1 + 2 * pad_y, min_h + 1)
        crops.append([max(0, int(cx - w / 2)), max(0, int(cy - h / 2)), min(width, int(cx + w / 2) + 1),
                      min(height, int(cy + h / 2) + 1)])
    merged = _merge(crops, cheaper=close(dt, poor))
    if sum(area(c) for c in merged) > FULL_FRAME_SHARE * width * height:  # pixels scanned: an overlap left apart twice
        return scale, whole
    return scale, [(c[0], c[1], c[2], c[3]) for c in merged if (c[2] - c[0]) * scale >= window[0] and (c[3] - c[1]) * scale >= window[1]]


def fitted(state: CameraState, crops: list[tuple[int, int, int, int]], regions: list[tuple[int, int, int, int]],
           scale: float, window: tuple[int, int], box_px: float, dt: float = 0.0,
           poor: bool = False) -> list[float]:
    """Each crop's upscale: the camera's (`scale`, people down to SMALLEST_SHARE of the typical height) unless all
    it holds is people found last frame and the motion they explain. Then their own heights say how big they are:
    HOG's boxes (`box_px` tall at its window's size) are found down to KNOWN_SHARE of the smallest one's box (a
    walker grows or shrinks a few % a frame), never finer than `scale`. A crop's largest person is bounded by its
    height (HOG needs its window round them), not by its upscale, so only the pyramid's finest levels go: those that
    find people smaller than anyone in it.
    Motion no found person explains (someone new, a part of someone, or two people's blobs in one) keeps `scale`;
    so do people within a step (APART) of each other: a pair walking together is where HOG loses one to the other,
    and fitted to the one it found, vtest x0.5 5 fps lost the pair's two crossings. So does a frame
    that is not `close` to the last (under 4 fps a walker's motion no longer lies in their box; a poor picture's
    boxes are ragged)."""
    typical = state.person_height()
    if not close(dt, poor) or typical is None or not len(state.last_boxes):
        return [scale] * len(crops)
    boxes = np.asarray(state.last_boxes, np.float64).reshape(-1, 4)
    moving = np.asarray([r for r in regions if r[3] - r[1] >= 0.3 * typical], np.float64).reshape(-1, 4)  # plan's
    held, moved = centres_in(boxes, crops), centres_in(moving, crops)
    scales = []
    for i, crop in enumerate(crops):
        theirs = boxes[held[:, i]]
        unexplained = any(not any(_moving(r, b) for b in theirs) for r in moving[moved[:, i]])
        if not len(theirs) or unexplained or not apart(theirs).all():
            scales.append(scale)
            continue
        need = box_px / (KNOWN_SHARE * max(float((theirs[:, 3] - theirs[:, 1]).min()), 1.0))
        fits = max(window[1] / (crop[3] - crop[1]), window[0] / (crop[2] - crop[0])) * 1.01  # the window fits in it
        scales.append(min(scale, max(need, fits)))
    return scales


def inside(box: np.ndarray | tuple[float, ...], others: list) -> float:
    """Share of `box` covered by `others` (summed: the moving regions and people's boxes barely overlap)."""
    return min(1.0, sum(overlap(box, o) for o in others) / max(area(box), 1.0))


def centres_in(boxes: np.ndarray, areas: np.ndarray | list) -> np.ndarray:
    """boxes x areas: whether each box's centre lies in each area (edges included)."""
    areas = np.asarray(areas, np.float64).reshape(-1, 4)
    cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
    return ((areas[None, :, 0] <= cx[:, None]) & (cx[:, None] <= areas[None, :, 2])
            & (areas[None, :, 1] <= cy[:, None]) & (cy[:, None] <= areas[None, :, 3]))


def apart(boxes: np.ndarray) -> np.ndarray:
    """Which people have no one else within a step's reach (each box grown by APART of its own height): two who
    walk together or cross paths may swap places in a picture match (and in the tracker after it), and HOG loses
    one to the other more often than it loses someone alone."""
    reach = APART * np.array([-1, -1, 1, 1], np.float64)[None, :]
    grown = boxes + reach * (boxes[:, 3:4] - boxes[:, 1:2])
    lo = np.maximum(grown[:, None, :2], grown[None, :, :2])
    hi = np.minimum(grown[:, None, 2:], grown[None, :, 2:])
    touch = np.all(hi > lo, axis=2)
    np.fill_diagonal(touch, False)
    return ~touch.any(axis=1)


def _moving(region: tuple[float, ...], box: tuple[float, ...]) -> bool:
    """The moving region is a person found last frame, moving: at least half of it lies in their box, and it is
    about their size. Shorter than 0.7 of the box, it may be a smaller person beside them (or a part of them); over
    1.3 times its area, the person and someone else in one blob."""
    return (inside(region, [box]) >= 0.5 and region[3] - region[1] >= 0.7 * (box[3] - box[1])
            and area(region) <= 1.3 * area(box))


def _merge(boxes: list[list[int]], cheaper: bool = False) -> list[list[int]]:
    """Overlapping boxes joined into their bounding box until no two overlap (each pixel scanned once). With
    `cheaper` (a frame `close` to the last: the tight pad's conditions), two are joined only where one scan of their
    bounding box reads no more pixels than scanning both, their overlap twice: two crops touching at a corner
    (walkers apart on a diagonal) stay two, their bounding box mostly background no one moved in. At 2 fps or in
    a poor picture every overlap is joined: there the split crops counted a noisy night IR street 21 of 16."""
    boxes = [list(b) for b in boxes]
    changed = True
    while changed:
        changed = False
        out: list[list[int]] = []
        for b in boxes:
            for o in out:
                joined = [min(o[0], b[0]), min(o[1], b[1]), max(o[2], b[2]), max(o[3], b[3])]
                if (b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3]
                        and (not cheaper or area(joined) <= area(o) + area(b))):
                    o[:] = joined
                    changed = True
                    break
            else:
                out.append(b)
        boxes = out
    return boxes
