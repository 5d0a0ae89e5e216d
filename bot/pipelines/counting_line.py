"""`/vision start … line=`: a counting line from `X1,Y1,X2,Y2` pixels or `middle` (vertical, through the frame centre)."""

from __future__ import annotations

import asyncio
import re

from bot.media.sources import capture_reference

LINE_HINT = ("line= takes X1,Y1,X2,Y2 in pixels (e.g. line=320,0,320,480; add @WIDTHxHEIGHT when they were "
             "measured on a frame of another size, e.g. line=640,0,640,576@1280x720) or line=middle")
_NUMBERS = re.compile(r"^\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*$")
_SIZE = re.compile(r"@\s*(\d+)\s*[x×]\s*(\d+)\s*$", re.IGNORECASE)
MAX_SIDE = 16384  # px: no camera frame is wider or taller
PROBE_TIMEOUT_MS = 5000  # a camera that does not answer must not hold the command for long


def split_size(raw: str) -> tuple[str, tuple[int, int] | None]:
    """`…@WIDTHxHEIGHT` → (the points' text, the frame size they were measured on); no suffix → (raw, None).

    Cameras hand analytics a resized sub-stream: points read off the main stream (or a screenshot) name that size,
    and the pipeline moves them onto the frames it gets (`rescale`).
    """
    m = _SIZE.search(raw)
    if m is None:
        return raw, None
    width, height = int(m[1]), int(m[2])
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise ValueError(f"@WIDTHxHEIGHT names the frame size the points were measured on, 1 to {MAX_SIDE} px a "
                         f"side (e.g. @1280x720), not {raw[m.start():]!r}.")
    return raw[: m.start()], (width, height)


def rescale(points: list[list[int]], given: tuple[int, int] | None, frame: tuple[int, int] | None) -> list[list[int]]:
    """Points measured on a `given`-sized frame, moved onto a `frame`-sized one (as they are without both sizes)."""
    if given is None or frame is None or given == frame:
        return points
    fx, fy = frame[0] / given[0], frame[1] / given[1]
    return [[round(x * fx), round(y * fy)] for x, y in points]


def parse_line(raw: str) -> list[list[int]] | None:
    """Two [x, y] points from `X1,Y1,X2,Y2` (as given: any @WIDTHxHEIGHT is `split_size`'s); None for `middle`
    (placed once the frame size is known).

    ValueError (one line, with the syntax) for anything else, including a line of zero length.
    """
    text = split_size(raw)[0].strip().lower()
    if text in ("middle", "center", "centre"):
        return None
    m = _NUMBERS.match(text)
    if not m:
        raise ValueError(f"{LINE_HINT}, not {raw!r}.")
    x1, y1, x2, y2 = (int(v) for v in m.groups())
    if (x1, y1) == (x2, y2):
        raise ValueError(f"line= needs two different points, not {raw!r}; e.g. line=320,0,320,480.")
    return [[x1, y1], [x2, y2]]


def middle_line(width: int, height: int) -> list[list[int]]:
    """A vertical line through the centre of a width×height frame, top to bottom."""
    return [[width // 2, 0], [width // 2, height]]


def probe_size(source: str) -> tuple[int, int] | None:
    """(width, height) of the source's first frame, or None when it cannot be read (blocking: run in a thread)."""
    import cv2

    params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, PROBE_TIMEOUT_MS, cv2.CAP_PROP_READ_TIMEOUT_MSEC, PROBE_TIMEOUT_MS]
    cap = cv2.VideoCapture(capture_reference(source), cv2.CAP_ANY, params)
    try:
        ok, frame = cap.read() if cap.isOpened() else (False, None)
        if not ok or frame is None:
            return None
        height, width = frame.shape[:2]
        return int(width), int(height)
    finally:
        cap.release()


async def frame_size(source: str, why: str) -> tuple[int, int]:
    """(width, height) of the source's frames, read from one (ValueError saying `why` it was needed if not)."""
    size = await asyncio.to_thread(probe_size, source)
    if size is None:
        raise ValueError(f"Could not read a frame to {why}; check the source, or give the points in the stream's "
                         "own pixels without @WIDTHxHEIGHT.")
    return size
