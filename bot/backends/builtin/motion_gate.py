"""The motion gate: a builtin detector on a camera where nothing moved repeats its last findings instead of running.

A quiet camera (an empty corridor at night, a car park, people standing still) gives nearly the same frame again and
again, and HOG over a whole 640x480 frame costs ~130 ms of CPU each time. A small grey copy of the frame (GATE_WIDTH
px wide, ~0.3 ms) compared with the one the detector last ran on says whether anything changed; if not, and the
detector ran less than FULL_PASS_SECONDS of video ago, the block repeats what it found then. The trade: something
that appears without moving (a person standing perfectly still from the first frame whom a pass missed, a box left
in a dark corner) waits for the next full pass, at most FULL_PASS_SECONDS. On by default (`inference.motion_gate`),
per detector step with `motion_gate: false`.
"""

from __future__ import annotations

import threading
from typing import Any

import cv2
import numpy as np
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData

from bot.backends.builtin.common import is_video_frame
from bot.backends.builtin.line_counter import video_time
from bot.backends.builtin.recent import Recent

GATE_WIDTH = 160  # px: the compared copy (a 640 px frame in 4x4 blocks: a 10 px wide passer-by still shows)
CHANGE_LEVEL = 12  # grey levels a block must change (sensor noise and re-encoding move a still street's by <= 6)
CHANGED_BLOCKS = 2  # blocks that must change: one hot pixel is not motion
FULL_PASS_SECONDS = 4.0  # of video: the detector runs at least this often, whatever the gate says
MAX_VIDEOS = 64  # gates kept per block; the least recently seen video goes


class MotionGate:
    """One video's reference (the small grey frame the detector last ran on, and when, in video seconds) and what
    the detector found then (`last`, the block's to read; None: nothing to repeat, so it runs)."""

    skipped = 0  # detector runs skipped in this process (benches and tests count them)
    _count_lock = threading.Lock()

    def __init__(self) -> None:
        self.reference: np.ndarray | None = None
        self.ran_at = 0.0
        self.last: Any = None

    def still(self, frame: np.ndarray, now: float, hold: float = 0.0) -> bool:
        """True: skip the detector on this frame (nothing moved since it last ran, under FULL_PASS_SECONDS ago, or it
        ran under `hold` seconds ago, moved or not; and there is something to repeat). False: run it; this frame
        becomes the reference."""
        small = shrink(frame)
        since = now - self.ran_at
        if self.last is not None and self.reference is not None and self.reference.shape == small.shape and (
                0.0 <= since < hold or (0.0 <= since < FULL_PASS_SECONDS and not moved(self.reference, small))):
            with MotionGate._count_lock:
                MotionGate.skipped += 1
            return True
        self.reference, self.ran_at = small, now
        return False


def shrink(frame: np.ndarray) -> np.ndarray:
    """The frame grey and GATE_WIDTH px wide (or as it is, if narrower): each pixel the mean of a block."""
    grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame
    f = min(1.0, GATE_WIDTH / max(1, grey.shape[1]))
    return cv2.resize(grey, None, fx=f, fy=f, interpolation=cv2.INTER_AREA) if f < 1.0 else grey


def moved(reference: np.ndarray, small: np.ndarray) -> bool:
    """Whether enough blocks changed by more than CHANGE_LEVEL."""
    return int(np.count_nonzero(cv2.absdiff(reference, small) > CHANGE_LEVEL)) >= CHANGED_BLOCKS


def video_clock(image: WorkflowImageData) -> tuple[str, float] | None:
    """(video id, seconds into it) of a video frame; None for a still image (one that came without video metadata:
    the property would make some up), which the gate never skips."""
    if not is_video_frame(image):
        return None
    return str(image.video_metadata.video_identifier), video_time(image.video_metadata)


class Gates:
    """The gates of the videos one block sees, by video id (thread-safe; bounded)."""

    def __init__(self) -> None:
        self._gates: Recent[str, MotionGate] = Recent(MAX_VIDEOS)

    def repeat(self, image: WorkflowImageData, hold: float = 0.0) -> Any:
        """What the detector found when it last ran on this video, if it may skip this frame (nothing moved, or it
        ran under `hold` seconds of video ago: a resting camera, builtin/light.py); None: run it (and tell `found`).
        A still image always runs."""
        clock = video_clock(image)
        if clock is None:
            return None
        gate = self._of(clock[0])
        return gate.last if gate.still(image.numpy_image, clock[1], hold) else None

    def found(self, image: WorkflowImageData, findings: Any) -> None:
        """What the detector found on this frame, to repeat while nothing moves (None: never repeat it)."""
        clock = video_clock(image)
        if clock is not None:
            self._of(clock[0]).last = findings

    def _of(self, video_id: str) -> MotionGate:
        return self._gates.get(video_id, MotionGate)
