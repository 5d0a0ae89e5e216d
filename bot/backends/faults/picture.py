"""What one frame's picture says, read from a 64x48 grid of its pixels: cheap enough for every frame (~50 µs on a
768x576 frame, bench/camera_faults.py), whatever the frame's size.

The grid takes single pixels, not block means: a live camera's sensor noise survives in them (a block mean would
average it away), and that noise is what tells a still scene from a frozen picture (watch.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GRID = (48, 64)  # rows, columns of the pixels read
_WEIGHTS = np.array([29, 150, 77], np.float32) / 256  # BGR -> luma (BT.601), as OpenCV's grey


@dataclass(frozen=True, slots=True)
class Look:
    """One frame: its size, its grey grid (float32, 0-255) and how colourful it is (the median over the grid of each
    pixel's max-min channel spread: 0 for a grey/IR picture, tens for a daylight street)."""

    size: tuple[int, int]  # (width, height) of the frame
    grey: np.ndarray
    chroma: float


def _grid(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = GRID
    ys = ((np.arange(rows) + 0.5) * height / rows).astype(np.intp)
    xs = ((np.arange(cols) + 0.5) * width / cols).astype(np.intp)
    return ys[:, None], xs[None, :]


_grids: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}


def look(image: Any) -> Look | None:
    """A frame (BGR or grey numpy array, any size) read on the grid; None if it is no image."""
    shape = getattr(image, "shape", None)
    if shape is None or len(shape) < 2 or shape[0] < 1 or shape[1] < 1:
        return None
    height, width = int(shape[0]), int(shape[1])
    grid = _grids.get((height, width))
    if grid is None:
        grid = _grids[(height, width)] = _grid(height, width)
        if len(_grids) > 32:  # a few sizes per process; never a leak if a source sends many
            _grids.pop(next(iter(_grids)))
    picked = np.asarray(image[grid[0], grid[1]])
    if picked.ndim == 2 or picked.shape[2] == 1:
        return Look((width, height), picked.reshape(GRID).astype(np.float32), 0.0)
    bgr = picked[..., :3]
    grey = bgr.astype(np.float32) @ _WEIGHTS
    spread = (bgr.max(axis=2).astype(np.int16) - bgr.min(axis=2)).ravel()
    chroma = float(np.partition(spread, spread.size // 2)[spread.size // 2])
    return Look((width, height), grey, chroma)


def change(a: Look, b: Look) -> float:
    """How much the picture changed between two frames: the mean absolute grey difference over the grid (0: the
    same pixels; a live camera's noise alone gives tenths to a few levels, people walking several)."""
    return float(np.abs(a.grey - b.grey).mean())


def tone(grey: np.ndarray) -> tuple[float, float]:
    """(95th percentile, standard deviation) of a grey grid: a black picture is dark almost everywhere and flat."""
    flat = grey.ravel()
    k = int(flat.size * 0.95)
    return float(np.partition(flat, k)[k]), float(flat.std())
