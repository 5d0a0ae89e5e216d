"""Whether things moved between two frames (JPEG): the share of the picture whose grey changed clearly, read at 1/8
scale. What a verified alert's look (which frames the model sees) and the camera readiness table (the motion column)
both ask; the camera-fault watch judges frozen pictures on every frame with its own finer measure."""

from __future__ import annotations

import io
from typing import Any

MOTION = 0.01  # share of the picture whose grey changed by more than CHANGED: things moved (a person far down a
CHANGED = 25  # street is ~2 %; sensor noise at 1/8 scale stays under CHANGED; the street clip a tenth of a second
#               apart already changes 1.2 %)


def grey(jpeg: bytes) -> Any | None:
    """A small grey picture (64×48, float32) of a JPEG, or None when it is not one."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(jpeg)) as im:
            im.draft("L", (80, 60))  # decoded at 1/8 scale: this is a motion test, not a picture
            return np.asarray(im.convert("L").resize((64, 48)), dtype=np.float32)
    except (OSError, UnidentifiedImageError, ValueError):
        return None


def changed(first: bytes, last: bytes) -> float | None:
    """The share of the picture (0-1) that changed from `first` to `last`; None when either is no picture."""
    a, b = grey(first), grey(last)
    if a is None or b is None:
        return None
    return float((abs(a - b) > CHANGED).mean())


def moving(first: bytes, last: bytes) -> bool | None:
    """True when things moved between the two frames, False for a still scene, None when it cannot tell."""
    share = changed(first, last)
    return None if share is None else share >= MOTION
