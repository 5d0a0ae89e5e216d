"""A live source's connection as its frames tell it: when a frame last came, the (re)connections tried since and why
the last one failed, and the wait before the next one (a bounded backoff).

InferencePipeline reconnects a live source that ends by itself, every second, forever (streamvision's
`_attempt_reconnect`, INFERENCE_PIPELINE_RESTART_ATTEMPT_DELAY): a camera away for ten minutes was tried 600 times,
each with two warnings in the log. The direct backend's source (capture.BoundedSource) asks `wait_turn()` before each
open, so tries after the first failures wait 1, 2, 4, 8 then at most MAX_DELAY seconds (and the frames of a camera
that comes back are picked up within MAX_DELAY); a frame resets it, so a snapshot camera (one JPEG per connection)
is opened again at once.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

MAX_DELAY = 15.0  # seconds between two tries, at most
# Why an open failed, from FFmpeg's words (never the words themselves: they hold the URL, and its password).
_REASONS = (
    (("401", "unauthorized", "403", "forbidden"), "it refuses the credentials"),
    (("404", "not found"), "no stream at that address"),
    (("refused",), "connection refused"),
    (("timed out", "timeout"), "no answer"),
    (("unreachable", "no route", "name or service", "resolve", "temporary failure"), "address unreachable"),
)


# Addresses in the decoder's words (a URL, host:port): their digits are no HTTP status (port 44013 holds "401").
_ADDRESS = re.compile(r"\S+://\S*|[\w.-]+:\d+")


def reason_of(message: str) -> str:
    """A failed open's cause in a few fixed words (the underlying message may carry the source's password)."""
    low = _ADDRESS.sub(" ", message.lower())
    for needles, words in _REASONS:
        if any(re.search(rf"\b{re.escape(n)}\b", low) for n in needles):
            return words
    return "it cannot be opened" if low.strip() else ""


def delay(tries: int) -> float:
    """Seconds to wait before try number `tries` since the last frame: the first at once, then 1, 2, 4, 8, …,
    MAX_DELAY."""
    return 0.0 if tries <= 1 else min(MAX_DELAY, 2.0 ** (tries - 2))


class Link:
    """Thread-safe: frames come on the decoding thread, tries on streamvision's reconnection thread, reads anywhere."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.last_frame: float | None = None
        self.tries = 0  # (re)connections tried since the last frame
        self.failed = 0  # ... of which failed to open
        self.reason = ""  # why the last one failed ("" when it opened)
        self.next_try: float | None = None  # when the next try starts (None: not waiting)

    def frame(self, now: float | None = None) -> None:
        """A frame came from the source."""
        with self._lock:
            self.last_frame = self._clock() if now is None else now
            self.tries = self.failed = 0
            self.reason = ""

    def tried(self, opened: bool, message: str = "") -> None:
        """A (re)connection was tried: it opened, or not (`message`: the decoder's words, never kept)."""
        with self._lock:
            if not opened:
                self.failed += 1
            self.reason = "" if opened else reason_of(message) or "it cannot be opened"

    def wait_turn(self) -> bool:
        """Before a (re)connection: wait the backoff's delay for it. False if the pipeline stopped meanwhile."""
        with self._lock:
            self.tries += 1
            wait = delay(self.tries)
            self.next_try = self._clock() + wait if wait else None
        try:
            return not self._stop.wait(wait) if wait else not self._stop.is_set()
        finally:
            with self._lock:
                self.next_try = None

    def resumed(self, now: float | None = None) -> None:
        """The pipeline was paused and runs again: the gap while it was paused is no video loss."""
        with self._lock:
            if self.last_frame is not None:
                self.last_frame = self._clock() if now is None else now

    def stop(self) -> None:
        """The pipeline ends: a wait for the next try ends at once."""
        self._stop.set()

    def state(self) -> tuple[float | None, int, int, str, float | None]:
        """(last frame, tries, failed, reason, next try) read together."""
        with self._lock:
            return self.last_frame, self.tries, self.failed, self.reason, self.next_try
