"""Real footage for the quality benchmarks: Debian's opencv-doc videos, the labels in bench/data, IoU matching."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
CACHE = Path(os.environ.get("VISION_AGENT_BENCH_CACHE", Path.home() / ".cache" / "vision-agent" / "opencv-doc"))
EXAMPLES = "usr/share/doc/opencv-doc/examples/data"
MIN_PERSON_PX = 60  # people shorter than this are outside the street-scale goal (60–200 px): ignored, not missed
MIN_FACE_PX = 40  # the faces goal: frontal faces from 40 px


class DataUnavailable(RuntimeError):
    """The real footage is not here and could not be fetched; the message says how to get it."""


def examples_dir() -> Path:
    """The opencv-doc examples folder, fetched once with `apt-get download opencv-doc` + `dpkg -x` into CACHE."""
    target = CACHE / EXAMPLES
    if (target / "vtest.avi").exists():
        return target
    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        raise DataUnavailable("the real footage comes from Debian's opencv-doc package; this machine has no "
                              f"apt-get/dpkg: unpack opencv-doc_*.deb into {CACHE} by hand")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["apt-get", "download", "opencv-doc"], cwd=tmp, capture_output=True, text=True)
        if got.returncode != 0 and os.geteuid() == 0:  # a fresh machine has no package lists yet: fetch them once
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, text=True)
            got = subprocess.run(["apt-get", "download", "opencv-doc"], cwd=tmp, capture_output=True, text=True)
        debs = list(Path(tmp).glob("opencv-doc_*.deb"))
        if got.returncode != 0 or not debs:
            raise DataUnavailable(f"`apt-get download opencv-doc` failed ({got.stderr.strip()[-200:]}); "
                                  "run `apt-get update` first, or unpack opencv-doc_*.deb into " + str(CACHE))
        subprocess.run(["dpkg", "-x", str(debs[0]), str(CACHE)], check=True)
    if not (target / "vtest.avi").exists():
        raise DataUnavailable(f"opencv-doc unpacked into {CACHE} but has no {EXAMPLES}/vtest.avi")
    return target


def street_video() -> Path | None:
    """OpenCV's street video (vtest.avi) from the set-up step, or None after one line saying how to get it."""
    try:
        return examples_dir() / "vtest.avi"
    except DataUnavailable as exc:
        print(f"skipped: {exc}")
        return None


def read_frames(video: Path, wanted: set[int] | None = None) -> dict[int, Any]:
    """Frames of a video by index (all of them when wanted is None), BGR numpy arrays."""
    import cv2

    cap = cv2.VideoCapture(str(video))
    frames: dict[int, Any] = {}
    index = 0
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            if wanted is None or index in wanted:
                frames[index] = frame
            index += 1
    finally:
        cap.release()
    return frames


@dataclass(frozen=True)
class Truth:
    boxes: list[tuple[float, float, float, float]]  # must be found
    ignored: list[tuple[float, float, float, float]]  # a hit here is neither right nor wrong


def _truth(items: list[Any], min_height: float) -> Truth:
    boxes, ignored = [], []
    for item in items:
        box = tuple(item["box"] if isinstance(item, dict) else item)
        small = box[3] - box[1] < min_height
        (ignored if small or (isinstance(item, dict) and item.get("ignore")) else boxes).append(box)
    return Truth(boxes, ignored)


def people_labels() -> dict[int, Truth]:
    raw = json.loads((DATA / "vtest_people.json").read_text())
    return {int(k): _truth(v, MIN_PERSON_PX) for k, v in raw["frames"].items()}


def face_labels() -> dict[str, Truth]:
    raw = json.loads((DATA / "faces.json").read_text())
    return {k: _truth(v, 0) for k, v in raw["images"].items()}


def crossing_labels() -> dict[str, Any]:
    return json.loads((DATA / "vtest_crossings.json").read_text())


def iou(a: Any, b: Any) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(found: list[Any], truth: Truth, threshold: float = 0.5) -> tuple[int, int, int]:
    """(true positives, false positives, misses): greedy one-to-one at IoU >= threshold; ignored boxes absorb hits."""
    unmatched = list(truth.boxes)
    tp = fp = 0
    for box in found:
        best = max(unmatched, key=lambda t: iou(box, t), default=None)
        if best is not None and iou(box, best) >= threshold:
            unmatched.remove(best)
            tp += 1
        elif not any(iou(box, ig) >= threshold or _inside(box, ig) for ig in truth.ignored):
            fp += 1
    return tp, fp, len(unmatched)


def _inside(box: Any, region: Any) -> bool:
    """Most of box lies in region (a hit on part of an occluded person is not a false alarm)."""
    ix = max(0.0, min(box[2], region[2]) - max(box[0], region[0]))
    iy = max(0.0, min(box[3], region[3]) - max(box[1], region[1]))
    return ix * iy >= 0.5 * (box[2] - box[0]) * (box[3] - box[1])


def mosaic(
    images: dict[str, Any], labels: dict[str, Truth], tile: tuple[int, int], cols: int, min_height: float
) -> tuple[Any, Truth]:
    """Real images shrunk into one grid of tile-sized cells (aspect kept, padded), with their labels moved along.

    Small faces from real frames: Megamind's faces are 150–300 px; at a third they are ~50–100 px. Boxes that
    end up shorter than min_height are ignored (outside the goal), not missed.
    """
    import cv2
    import numpy as np

    tw, th = tile
    rows = -(-len(images) // cols)
    canvas = np.zeros((rows * th, cols * tw, 3), dtype=np.uint8)
    boxes: list[tuple[float, float, float, float]] = []
    ignored: list[tuple[float, float, float, float]] = []
    for n, (key, image) in enumerate(images.items()):
        s = min(tw / image.shape[1], th / image.shape[0])
        small = cv2.resize(image, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
        ox, oy = (n % cols) * tw, (n // cols) * th
        canvas[oy : oy + small.shape[0], ox : ox + small.shape[1]] = small
        for src, dst in ((labels[key].boxes, boxes), (labels[key].ignored, ignored)):
            dst.extend((x1 * s + ox, y1 * s + oy, x2 * s + ox, y2 * s + oy) for x1, y1, x2, y2 in src)
    small_ones = [b for b in boxes if b[3] - b[1] < min_height]
    return canvas, Truth([b for b in boxes if b not in small_ones], ignored + small_ones)
