"""One pipeline's camera, judged from its frames: video lost, a frozen, black/covered or grey picture, a new size.

Each fault has a start (`since`) and, once over, an end; the health check says each start once and each end once
(bot/monitoring/camera_news.py). What separates the faults from a camera that is merely quiet, measured on real
footage (bench/camera_faults.py; the numbers are the grid's mean absolute grey change between frames, picture.py):

- frozen: a frozen camera repeats the same decoded frame (MJPEG: bit-identical, a change of 0; H.264: its encoder
  settles on skip blocks, 61-96 % of its changes at or under 0.003, with a jump at each keyframe), while a live still
  scene keeps its sensor noise: the empty upper half of OpenCV's street footage changes by 0.36-0.84 (median) raw or
  as H.264 at CRF 23-35, and even a 384x288 crop of it re-encoded at CRF 30-35 has at most a third of its changes at
  or under 0.003. Frozen: over the last WINDOW seconds, the median change is at or under the still level (STILL, or
  a tenth of the camera's own quiet level once measured, within STILL_BOUNDS): most frames repeat the one before.
- black or covered: dark almost everywhere (95th percentile under DARK) and flat (deviation under FLAT), read on a
  running mean of the grid so a dark camera's noise does not pass for detail; the street at 7 % of its light
  (people still visible) has a deviation of 3.7, a black or covered frame with noise under 1.5.
- grey: a camera that sent colour now sends none (the grid's median chroma at or under GREY_CHROMA: a grey picture's
  is 0, drawn boxes on it or not; the street's 30, a washed-out clip's 4, the street at a tenth of its light 3); a
  dark picture is not judged (too little light to tell colour).
- video lost: no frame for VIDEO_SECONDS, or four of the camera's own frame intervals if that is longer.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bot.backends.faults.kinds import BLACK, FROZEN, GREY, SIZE, VIDEO, Fault, FaultKind, lasted
from bot.backends.faults.link import Link
from bot.backends.faults.picture import Look, change, look, tone

VIDEO_SECONDS = 8.0  # no frame for this long (or four frame intervals): the video is lost
WINDOW = 10.0  # seconds of frame changes a frozen picture is judged on (MIN_FRAMES at least, however long)
HOLD = 5.0  # seconds a picture fault must last before it is said
MIN_FRAMES = 4  # ... over at least this many frames (a 0.5 fps pipeline: 8 s)
STILL = 0.004  # mean grey change at or under which two frames show the same picture (the floor unknown)
STILL_BOUNDS = (0.002, 0.05)  # the still level a camera's own floor may set, a tenth of it
MOVING_RUN = 3  # changes in a row over the still level: the picture moves (a keyframe's jump is one)
DARK, FLAT = 40.0, 3.0  # black/covered: 95th percentile grey under DARK and deviation under FLAT
GREY_CHROMA, COLOUR_CHROMA = 1.5, 3.0  # the grid's median chroma (picture.py): grey at or under, colour over
EMA = 0.3  # weight of a new frame in the running mean the black check reads
RECENT = 8  # ended faults kept for the health check to say


class _Run:
    """A picture condition over consecutive frames: on once it held HOLD seconds and MIN_FRAMES frames, off after
    `release` frames without it."""

    def __init__(self, release: int) -> None:
        self.release = release
        self.began: float | None = None  # the condition's first frame in the current stretch
        self.frames = 0
        self.misses = 0
        self.on = False

    def saw(self, held: bool, now: float) -> str | None:
        """'on' / 'off' when the fault starts / ends with this frame, else None."""
        if held:
            self.misses = 0
            if self.began is None:
                self.began, self.frames = now, 0
            self.frames += 1
            if not self.on and now - self.began >= HOLD and self.frames >= MIN_FRAMES:
                self.on = True
                return "on"
            return None
        self.misses += 1
        if self.misses >= self.release:
            self.began = None
            if self.on:
                self.on = False
                return "off"
        return None


class CameraWatch:
    """Fed every frame a pipeline processes (`saw`); `faults(now)` says what is wrong. Thread-safe."""

    def __init__(self, live: bool, clock: Callable[[], float] = time.time, remote: bool = False) -> None:
        self.live = live  # a file's end is no video loss
        self.remote = remote  # the source is opened elsewhere (an inference server): its reconnections are unseen
        self.link = Link(clock)
        self._clock = clock
        self._lock = threading.Lock()
        self._last: Look | None = None
        self._ema: np.ndarray | None = None
        self._changes: deque[tuple[float, float]] = deque(maxlen=512)  # (time, change) of the last WINDOW
        self._moving = 0  # changes over the still level in a row
        self._still_since: float | None = None
        self._frozen_on = False  # ended by MOVING_RUN changes in a row, not by one frame (a keyframe)
        self._black, self._grey = _Run(release=2), _Run(release=2)
        self._colour = 0  # frames in colour seen (the camera sends colour: it can turn grey)
        self._floor: deque[float] = deque(maxlen=120)  # medians of windows not frozen, one each WINDOW / 2 s
        self._floor_at = 0.0
        self._level = STILL  # the still level now (_level_of_floor)
        self._size: tuple[int, int] | None = None
        self._new_size: tuple[tuple[int, int], int] | None = None  # a size seen, and on how many frames in a row
        self._open: dict[str, Fault] = {}  # picture faults on now
        self._ended: deque[Fault] = deque(maxlen=RECENT)
        self._intervals: deque[float] = deque(maxlen=16)
        self._arrivals = 0
        self._after = VIDEO_SECONDS  # no frame for this long: video lost (VIDEO_SECONDS or four usual intervals)

    # --- frames --------------------------------------------------------------------------------------------------

    def arrived(self, now: float | None = None) -> None:
        """A frame came from the camera (the direct backend: read from it, decoded or not; http: a result)."""
        now = self._clock() if now is None else now
        last = self.link.state()[0]
        with self._lock:
            if last is not None and self.live:
                gap = now - last
                if gap > self._after:  # a loss, over now (said even if no check saw it while it lasted)
                    self._ended.append(Fault(VIDEO.name, last, f"no video for {lasted(gap)}", now))
                elif gap > 0:
                    self._intervals.append(gap)
                    self._arrivals += 1
                    if self._arrivals % len(self._intervals) == 0:  # the usual interval, now and then
                        self._after = max(VIDEO_SECONDS, 4 * float(np.median(self._intervals)))
        self.link.frame(now)

    def saw(self, image: Any, now: float | None = None) -> None:
        """A frame the pipeline processed (BGR numpy): its picture is judged."""
        seen = look(image)
        if seen is None:
            return
        now = self._clock() if now is None else now
        with self._lock:
            self._sized(seen, now)
            last, self._last = self._last, seen
            if last is not None and last.size == seen.size:
                self._still(change(last, seen), now)
            self._ema = seen.grey.copy() if self._ema is None or self._ema.shape != seen.grey.shape else (
                self._ema * (1 - EMA) + seen.grey * EMA)
            p95, spread = tone(self._ema)
            black = p95 <= DARK and spread <= FLAT
            self._step(BLACK, self._black.saw(black, now), now, "the picture is black or covered")
            if seen.chroma >= COLOUR_CHROMA and not black:  # it sends colour: it can turn grey
                self._colour += 1
            grey = self._colour >= MIN_FRAMES and not black and p95 > DARK and seen.chroma <= GREY_CHROMA
            self._step(GREY, self._grey.saw(grey, now), now, "the picture turned grey (night/IR mode)")

    def _still(self, moved: float, now: float) -> None:
        """One change between frames, for the frozen check (holding the lock)."""
        changes = self._changes
        changes.append((now, moved))
        while len(changes) > MIN_FRAMES and changes[0][0] < now - WINDOW:  # a slow camera: its last MIN_FRAMES
            changes.popleft()
        level = self._level
        self._moving = self._moving + 1 if moved > level else 0
        if self._moving >= MOVING_RUN:
            self._still_since = None
        elif moved <= level and self._still_since is None:
            self._still_since = now
        if len(changes) < MIN_FRAMES or now - changes[0][0] < WINDOW * 0.8:
            return
        repeats = sum(1 for _, c in changes if c <= level)  # the median is at or under the level: most repeat
        since = max(self._still_since, changes[0][0]) if self._still_since is not None else None
        if since is None or 2 * repeats < len(changes):
            if not self._frozen_on and now - self._floor_at >= WINDOW / 2:
                self._floor.append(float(np.median([c for _, c in changes])))  # the camera's quiet level
                self._floor_at = now
                self._level = self._level_of_floor()
        elif not self._frozen_on and now - since >= HOLD and not self._black.on:  # black says it all
            self._frozen_on = True
            self._open[FROZEN.name] = Fault(FROZEN.name, since, "the picture is frozen")
        if self._frozen_on and self._moving >= MOVING_RUN:
            self._frozen_on = False
            self._close(FROZEN, now)

    def _level_of_floor(self) -> float:
        """The change at or under which two frames show the same picture: a tenth of the camera's noise floor once
        measured (6 quiet windows), within STILL_BOUNDS; STILL before."""
        if len(self._floor) < 6:
            return STILL
        floor = float(np.percentile(self._floor, 10))
        return min(max(floor / 10, STILL_BOUNDS[0]), STILL_BOUNDS[1])

    def _sized(self, seen: Look, now: float) -> None:
        """A size change, said when a new size held two frames (a one-off, over as soon as it is said)."""
        if self._size is None:
            self._size = seen.size
            return
        if seen.size == self._size:
            self._new_size = None
            return
        count = self._new_size[1] + 1 if self._new_size and self._new_size[0] == seen.size else 1
        self._new_size = (seen.size, count)
        if count >= 2:
            (w0, h0), (w1, h1) = self._size, seen.size
            self._ended.append(Fault(SIZE.name, now, f"the picture changed size from {w0}×{h0} to {w1}×{h1}", now))
            self._size, self._new_size, self._ema, self._last = seen.size, None, None, None

    def _step(self, kind: FaultKind, turn: str | None, now: float, text: str) -> None:
        if turn == "on":
            began = (self._black if kind is BLACK else self._grey).began
            self._open[kind.name] = Fault(kind.name, began if began is not None else now, text)
        elif turn == "off":
            self._close(kind, now)

    def _close(self, kind: FaultKind, now: float) -> None:
        fault = self._open.pop(kind.name, None)
        if fault is not None:
            self._ended.append(replace(fault, ended=now))

    # --- what is wrong -------------------------------------------------------------------------------------------

    def faults(self, now: float | None = None, running: bool = True) -> tuple[Fault, ...]:
        """The faults on now, then those ended lately (the health check says each start and end once).
        `running`: the pipeline runs (paused or starting, a lack of frames is no video loss)."""
        now = self._clock() if now is None else now
        last, tries, failed, reason, next_try = self.link.state()
        with self._lock:
            on = list(self._open.values())
            if self.live and running and last is not None and now - last > self._after:
                on.insert(0, Fault(VIDEO.name, last, f"no video for {lasted(now - last)}"
                                   f"{_trying(tries, failed, reason, next_try, now, self.remote)}"))
            return (*on, *self._ended)


def _trying(tries: int, failed: int, reason: str, next_try: float | None, now: float, remote: bool) -> str:
    """What the reconnection does: ' (reconnecting, try 3: connection refused; next in 4 s)'."""
    if tries <= 0:
        return " (the inference server reconnects by itself)" if remote else " (connected, nothing comes)"
    why = f": {reason}" if reason and failed else ""
    wait = f"; next in {lasted(next_try - now)}" if next_try is not None and next_try - now >= 1 else ""
    return f" (reconnecting, try {tries}{why}{wait})"
