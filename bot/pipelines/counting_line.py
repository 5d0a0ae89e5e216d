"""`/vision start … line=`: a counting line from `X1,Y1,X2,Y2` pixels or `middle` (vertical, through the frame centre)."""

from __future__ import annotations

import asyncio
import re

from bot.media.sources import capture_reference

LINE_HINT = "line= takes X1,Y1,X2,Y2 in pixels (e.g. line=320,0,320,480) or line=middle"
_NUMBERS = re.compile(r"^\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*$")
PROBE_TIMEOUT_MS = 5000  # a camera that does not answer must not hold the command for long


def parse_line(raw: str) -> list[list[int]] | None:
    """Two [x, y] points from `X1,Y1,X2,Y2`; None for `middle` (placed once the frame size is known).

    ValueError (one line, with the syntax) for anything else, including a line of zero length.
    """
    text = raw.strip().lower()
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


def _probe_size(source: str) -> tuple[int, int] | None:
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


async def resolve_line(raw: str, source: str) -> list[list[int]]:
    """The counting line for `line=raw` on `source`; `middle` reads one frame to learn the size (ValueError if not)."""
    line = parse_line(raw)
    if line is not None:
        return line
    size = await asyncio.to_thread(_probe_size, source)
    if size is None:
        raise ValueError("Could not read a frame to place line=middle; check the source, or give the line as "
                         "line=X1,Y1,X2,Y2 in pixels.")
    return middle_line(*size)
