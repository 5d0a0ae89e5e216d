"""What one frame's picture says, read from a 64x48 grid of its pixels: cheap enough for every frame (tens of µs,
whatever the frame's size: bench/camera_faults.py).

The grid takes single pixels (a nearest-neighbour resize), not block means: a live camera's sensor noise survives
in them (a block mean would average it away), and that noise is what tells a still scene from a frozen picture
(watch.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GRID = (64, 48)  # (width, height) of the pixels read


@dataclass(frozen=True, slots=True)
class Look:
    """One frame: its size, its grey grid (float32, 0-255) and how colourful it is: the median over the grid of
    |Cr - 128| + |Cb - 128| (0 for a grey/IR picture, 30 for the daylight street, 3 for it at a tenth of its light)."""

    size: tuple[int, int]  # (width, height) of the frame
    grey: np.ndarray
    chroma: float


def look(image: Any) -> Look | None:
    """A frame (BGR or grey numpy array, any size) read on the grid; None if it is no image."""
    shape = getattr(image, "shape", None)
    if shape is None or len(shape) < 2 or shape[0] < 1 or shape[1] < 1:
        return None
    import cv2  # here, not above: importing the backends must not load OpenCV (seconds); once loaded, a dict lookup

    size = (int(shape[1]), int(shape[0]))
    sample = cv2.resize(image, GRID, interpolation=cv2.INTER_NEAREST)
    if sample.ndim == 2 or sample.shape[2] == 1:
        return Look(size, sample.reshape(GRID[1], GRID[0]).astype(np.float32), 0.0)
    ycc = cv2.cvtColor(np.ascontiguousarray(sample[..., :3]), cv2.COLOR_BGR2YCrCb)
    spread = (np.abs(ycc[..., 1].astype(np.int16) - 128) + np.abs(ycc[..., 2].astype(np.int16) - 128)).ravel()
    middle = spread.size // 2
    return Look(size, ycc[..., 0].astype(np.float32), float(np.partition(spread, middle)[middle]))


def change(a: Look, b: Look) -> float:
    """How much the picture changed between two frames: the mean absolute grey difference over the grid (0: the
    same pixels; a live camera's noise alone gives tenths to a few levels, people walking several)."""
    import cv2

    return float(cv2.norm(a.grey, b.grey, cv2.NORM_L1)) / a.grey.size


def tone(grey: np.ndarray) -> tuple[float, float]:
    """(95th percentile, standard deviation) of a grey grid: a black picture is dark almost everywhere and flat."""
    flat = grey.ravel()
    k = int(flat.size * 0.95)
    import cv2

    _, std = cv2.meanStdDev(grey)
    return float(np.partition(flat, k)[k]), float(std[0][0])
