"""Box arithmetic the builtin blocks share: boxes are (x1, y1, x2, y2) in pixels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Box = np.ndarray | Sequence[float]


def area(box: Box) -> float:
    """A box's area (0 when it is empty)."""
    return max(0.0, float(box[2] - box[0])) * max(0.0, float(box[3] - box[1]))


def overlap(a: Box, b: Box) -> float:
    """The area two boxes share (0 when they are apart)."""
    return area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))
