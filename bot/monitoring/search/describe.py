"""What an event shows, in words built from facts the pipeline already has: the class, its size, where it is in the
frame, which way it moves (its track over the last seconds) and the main colour of its box.

No model is asked: the words are what search ranks ("a white car, large, bottom left, driving right"), so they must
come cheaply on the pipeline thread for every event, held ones too. The colour is read from the event's frame at a
reduced JPEG decode (a few milliseconds), from the middle of the box, where the drawn outline and label are not.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from PIL import Image

from bot.backends.base import Detection, InferenceResult

log = logging.getLogger(__name__)

Box = tuple[float, float, float, float]
MAX_NAMED = 3  # objects described in words; the rest are counted
WINDOW_SECONDS = 3.0  # the stretch of a track its direction is read from
FORGET_SECONDS = 10.0  # a track not seen this long is dropped
MOVED = 0.04  # of the frame's width (height): less over the window is not a direction
STILL = 0.015  # ... and under this over at least STILL_SECONDS it stands still
STILL_SECONDS = 1.0
SECOND_COLOUR = 0.25  # of the box's middle: a second colour this common is said too
COLOUR_SIDE = 192  # the frame is decoded at about this width for the colour (JPEG draft: a fraction of a full decode)
# COCO's own supercategories, for the words of meaning ("a vehicle", "an animal") a class name does not carry
VEHICLES = frozenset({"car", "truck", "bus", "van", "motorcycle", "bicycle", "train", "boat", "airplane", "vehicle"})
ANIMALS = frozenset({"dog", "cat", "bird", "horse", "sheep", "cow", "bear", "elephant", "zebra", "giraffe", "animal"})
_RIDDEN = frozenset({"bicycle", "motorcycle"})


@dataclass(frozen=True)
class Seen:
    """What one event shows: its words and the box of its main object as fractions of the frame (x1, y1, x2, y2 in
    0..1: the frame an alert carries may be scaled from the source), None when nothing was detected."""

    text: str
    box: Box | None = None


def _verbs(cls: str) -> tuple[str, str]:
    """How the class moves and stands, in words: (walking, standing), (driving, parked), (moving, still)."""
    if cls == "person":
        return "walking", "standing"
    if cls in _RIDDEN:
        return "riding", "stopped"
    if cls in VEHICLES:
        return "driving", "parked"
    return "moving", "still"


class Tracks:
    """Where each tracked object of each camera was over the last seconds: the direction words. Fed every result (a
    dict append per tracked box); read when an event fires. Locked: results of two pipelines arrive on two threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, int], deque[tuple[float, float, float]]] = {}
        self._swept = 0.0

    def saw(self, camera: str, result: InferenceResult, now: float) -> None:
        with self._lock:
            for d in result.detections:
                if d.tracker_id is None:
                    continue
                path = self._seen.setdefault((camera, d.tracker_id), deque(maxlen=64))
                path.append((now, (d.xyxy[0] + d.xyxy[2]) / 2, (d.xyxy[1] + d.xyxy[3]) / 2))
                while path and now - path[0][0] > WINDOW_SECONDS:
                    path.popleft()
            if now - self._swept > FORGET_SECONDS:
                self._swept = now
                for key in [k for k, p in self._seen.items() if not p or now - p[-1][0] > FORGET_SECONDS]:
                    del self._seen[key]

    def motion(self, camera: str, d: Detection, size: tuple[int, int]) -> str | None:
        """'walking left', 'driving toward the camera', 'standing'; None: not tracked long enough to say."""
        if d.tracker_id is None:
            return None
        with self._lock:
            path = list(self._seen.get((camera, d.tracker_id), ()))
        if len(path) < 2:
            return None
        (t0, x0, y0), (t1, x1, y1) = path[0], path[-1]
        dx, dy = (x1 - x0) / max(1, size[0]), (y1 - y0) / max(1, size[1])
        moving, still = _verbs(d.class_name)
        if max(abs(dx), abs(dy)) >= MOVED:
            if abs(dx) >= abs(dy):
                return f"{moving} {'right' if dx > 0 else 'left'}"
            return f"{moving} {'toward the camera' if dy > 0 else 'away'}"
        if t1 - t0 >= STILL_SECONDS and max(abs(dx), abs(dy)) < STILL:
            return still
        return None


def where(box: Box, size: tuple[int, int]) -> str:
    """Where the box's centre is: 'bottom left', 'top centre', 'centre', 'left'."""
    cx, cy = (box[0] + box[2]) / 2 / max(1, size[0]), (box[1] + box[3]) / 2 / max(1, size[1])
    across = "left" if cx < 1 / 3 else "right" if cx > 2 / 3 else "centre"
    down = "top" if cy < 1 / 3 else "bottom" if cy > 2 / 3 else ""
    return f"{down} {across}".strip()


def how_big(box: Box, size: tuple[int, int]) -> str:
    """Small, medium or large by its share of the frame's height, with its height in pixels."""
    h = max(0.0, box[3] - box[1])
    share = h / max(1, size[1])
    word = "small" if share < 0.15 else "medium" if share < 0.4 else "large"
    return f"{word}, {round(h)} px tall"


def colour_name(rgb: np.ndarray) -> np.ndarray:
    """A colour word per pixel (N x 3 uint8 RGB in, N words out), by hue, saturation and value."""
    hsv = np.asarray(Image.fromarray(rgb.reshape(-1, 1, 3).astype(np.uint8), "RGB").convert("HSV"), dtype=np.float32)
    h, s, v = hsv[:, 0, 0] * 360 / 255, hsv[:, 0, 1], hsv[:, 0, 2]
    hue = np.select([(h < 15) | (h >= 345), h < 40, h < 70, h < 165, h < 255, h < 290],
                    ["red", "orange", "yellow", "green", "blue", "purple"], "pink")
    hue = np.where((hue == "orange") & (v < 150), "brown", hue)
    return np.select([v < 50, (s < 45) & (v > 185), s < 45], ["black", "white", "grey"], hue)


def decoded(frame: bytes) -> Image.Image | None:
    """The frame decoded at about COLOUR_SIDE px wide (a JPEG's draft mode: a fraction of a full decode)."""
    try:
        im = Image.open(io.BytesIO(frame))
        im.draft("RGB", (COLOUR_SIDE, COLOUR_SIDE * im.height // max(1, im.width)))
        return im.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        log.debug("no colours for an event: %s", exc)
        return None


def main_colour(im: Image.Image, box: Box, size: tuple[int, int]) -> str | None:
    """The most common colour word in the middle of the box (inside the drawn outline, below the label), and the
    second one when it covers a good part too ('black and red': a jacket's sleeves)."""
    sx, sy = im.width / max(1, size[0]), im.height / max(1, size[1])
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    crop = (int((x1 + 0.25 * w) * sx), int((y1 + 0.2 * h) * sy), int((x2 - 0.25 * w) * sx) + 1,
            int((y2 - 0.3 * h) * sy) + 1)
    pixels = np.asarray(im.crop(crop), dtype=np.uint8).reshape(-1, 3)
    if len(pixels) < 4:
        return None
    words, counts = np.unique(colour_name(pixels), return_counts=True)
    order = np.argsort(-counts)
    first = str(words[order[0]])
    if len(order) > 1 and counts[order[1]] >= SECOND_COLOUR * len(pixels):
        return f"{first} and {words[order[1]]}"
    return first


_PART = re.compile(r"^(?P<head>[^()]+?) \((?P<facts>[^()]*)\)$")
_MOTION = re.compile(r"^(walking|driving|riding|moving|standing|parked|still|stopped)\b")


def meaning(seen: str) -> str:
    """An event's words as a sentence for the embedding: what and how it moved, without pixels or places, which
    only blur the meaning ("a white van, a vehicle, driving left; a black person, walking right")."""
    out = []
    for part in seen.split("; "):
        m = _PART.match(part.strip())
        if m is None:
            continue
        head, kind = m["head"], ""
        for word in (" vehicle", " animal"):
            if head.endswith(word):
                head, kind = head.removesuffix(word), f", a{'n' * (word == ' animal')}{word}"
        motion = next((f for f in m["facts"].split(", ") if _MOTION.match(f)), "")
        out.append(f"a {head}{kind}" + (f", {motion}" if motion else ""))
    return "; ".join(out)


def describe(camera: str, result: InferenceResult, classes: Iterable[str | None] = (), tracks: Tracks | None = None,
             frame: bytes | None = None) -> Seen:
    """The event's words: its main objects (those of the rule's classes, largest first), each with colour, size,
    place and motion, and how many more there were."""
    wanted = {c for c in classes if c and c != "*"}
    dets = [d for d in result.detections if not wanted or d.class_name in wanted]
    if not dets:
        return Seen("")
    size = result.image_size or (int(max(d.xyxy[2] for d in dets)) or 1, int(max(d.xyxy[3] for d in dets)) or 1)
    dets.sort(key=lambda d: -(d.xyxy[2] - d.xyxy[0]) * (d.xyxy[3] - d.xyxy[1]))
    parts = []
    im = decoded(frame) if frame else None  # once per event, whatever the number of objects
    for d in dets[:MAX_NAMED]:
        colour = main_colour(im, d.xyxy, size) if im is not None else None
        facts = [how_big(d.xyxy, size), where(d.xyxy, size)]
        moved = tracks.motion(camera, d, size) if tracks is not None else None
        facts += [moved] if moved else []
        kind = " vehicle" if d.class_name in VEHICLES - {"vehicle"} else " animal" if d.class_name in ANIMALS - {
            "animal"} else ""
        parts.append(f"{colour + ' ' if colour else ''}{d.class_name}{kind} ({', '.join(facts)})")
    more = len(dets) - MAX_NAMED
    text = "; ".join(parts) + (f"; {more} more" if more > 0 else "")
    x1, y1, x2, y2 = dets[0].xyxy
    w, h = size
    return Seen(text, (round(x1 / w, 4), round(y1 / h, 4), round(x2 / w, 4), round(y2 / h, 4)))
