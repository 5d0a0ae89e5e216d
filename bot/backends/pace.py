"""A pipeline's frame rate over the last minute, and the one line saying when it cannot keep up with the rate asked.

A lifetime average hides what a person needs to know now: a camera asked for 5 fps that has run at 1.3 for the last
ten minutes still showed 4.6 after an hour of quiet. So the rate is the results of the last minute (since the first
result, before a minute has passed); a pipeline that stopped delivering shows it going down, not its old rate.

Why it falls short is read from the frames' own ids (each backend's video source numbers every frame it grabs,
also the ones it drops): a source that numbers fewer frames than were asked for is the camera's rate; one that
numbers enough while fewer come through is the detector's machine (a video file always has the frames).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW = 60.0  # seconds the rate is measured over
SETTLE = 10.0  # seconds of results before falling short is said (a rate over the first frames says little)
SHORT = 0.8  # delivering under this share of the rate asked is falling short (a steady 4.6 of 5 is not)
MAX_STAMPS = 120 * 60  # the most results a minute keeps (fps is at most 120)


class Pace:
    """Results as they arrive (`tick`), the last minute's rate (`fps`), and `short_of`: what falling short means.

    `target` is the rate the pipeline was asked to deliver (None: as fast as it goes, nothing to fall short of);
    `live` whether its source is a camera (a file always has the frames). Thread-safe.
    """

    def __init__(self, target: float | None = None, live: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.target, self.live, self._clock = target, live, clock
        self._stamps: deque[tuple[float, int | None]] = deque(maxlen=MAX_STAMPS)
        self._first: float | None = None
        self._lock = threading.Lock()

    def tick(self, frame_id: int | None = None) -> None:
        """One result delivered now; `frame_id` is its source's number for the frame (None when unknown)."""
        now = self._clock()
        with self._lock:
            if self._first is None:
                self._first = now
            self._stamps.append((now, frame_id))
            self._drop_before(now - WINDOW)

    def _drop_before(self, since: float) -> None:  # holding self._lock
        while self._stamps and self._stamps[0][0] < since:
            self._stamps.popleft()

    def fps(self, running: bool) -> float | None:
        """Results per second over the last minute (`running`: up to now, so a stall shows; else the minute before
        the last result); None before there are two results to measure."""
        with self._lock:
            return self._rate(running, self._clock())

    def _rate(self, running: bool, now: float) -> float | None:  # holding self._lock
        if not self._stamps or self._first is None:
            return None
        if not running:  # each tick kept only the minute before it: the minute before the last result
            span = self._stamps[-1][0] - self._stamps[0][0]
            return round((len(self._stamps) - 1) / span, 2) if span > 0 else None
        elapsed = now - self._first
        if elapsed >= WINDOW:  # counted, not dropped: a pipeline that ends after a stall keeps its last rate
            old = next((i for i, (t, _) in enumerate(self._stamps) if t >= now - WINDOW), len(self._stamps))
            return round((len(self._stamps) - old) / WINDOW, 2)
        # within the first minute every result is kept: the rate since the first one
        return round((len(self._stamps) - 1) / elapsed, 2) if len(self._stamps) > 1 and elapsed > 0 else None

    def short_of(self, running: bool) -> str | None:
        """'3.3 of 10 fps: CPU-bound; lower fps or size' while a running pipeline delivers under SHORT of its
        target after SETTLE seconds of results; None while it keeps up (or was asked for no rate)."""
        with self._lock:
            now = self._clock()
            if not running or self.target is None or self._first is None or now - self._first < SETTLE:
                return None
            rate = self._rate(True, now) or 0.0
            if rate >= SHORT * self.target:
                return None
            head = f"{rate:.1f} of {self.target:g} fps"
            sent = self._source_rate() if self.live else None
            if sent is not None and sent < SHORT * self.target:
                return f"{head}: the camera sends {sent:.1f} fps; ask for less or raise the camera's frame rate"
            return f"{head}: CPU-bound; lower fps or size"

    def _source_rate(self) -> float | None:  # holding self._lock
        """Frames the source numbered per second over the window (grabbed, also the ones dropped); None unknown."""
        first = next(((t, f) for t, f in self._stamps if f is not None), None)
        last = next(((t, f) for t, f in reversed(self._stamps) if f is not None), None)
        if first is None or last is None or last[0] <= first[0] or last[1] < first[1]:
            return None
        return (last[1] - first[1]) / (last[0] - first[0])
