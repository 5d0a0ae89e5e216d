"""`/vision start … line=`: a counting line from `X1,Y1,X2,Y2` pixels or `middle` (vertical, through the frame centre)."""

from __future__ import annotations

import asyncio
import re

from bot.media.frame_limit import bounded_size
from bot.media.sources import first_frame_size

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


def moved_note(given: tuple[int, int], frame: tuple[int, int] | None) -> str:
    """' (given at 768x576, moved onto this stream's 384x288 frames)'; a frame of another shape says so."""
    if frame is None or given == frame:
        return ""
    (gw, gh), (fw, fh) = given, frame
    if abs((gw / gh) / (fw / fh) - 1.0) <= 0.02:
        return f" (given at {gw}x{gh}, moved onto this stream's {fw}x{fh} frames)"
    # 4:3 points on a 16:9 sub-stream: the camera may have stretched, cropped or letterboxed it; only the user knows.
    return (f" (given at {gw}x{gh}, stretched onto this stream's {fw}x{fh} frames, another shape: if its "
            "sub-stream is cropped or letterboxed they land elsewhere, check them on /vision snapshot)")


def check_on_frame(line: list[list[int]] | None, zone: list[list[int]] | None, frame: tuple[int, int]) -> None:
    """ValueError (one line) for a line or zone wholly outside a width x height frame: it would never count."""
    import cv2

    width, height = frame
    fix = (f"give points in this stream's own {width}x{height} pixels (/vision snapshot shows a frame), or add the "
           "size of the frame you read them off, e.g. @1920x1080")
    if line is not None:
        (x1, y1), (x2, y2) = line
        if (x1, y1) == (x2, y2):  # a short line moved onto a much smaller frame: the pipeline would fail on it
            raise ValueError(f"The line becomes the point ({x1},{y1}) on this stream's {width}x{height} frames: "
                             "draw it longer.")
        if not cv2.clipLine((0, 0, width, height), (x1, y1), (x2, y2))[0]:
            raise ValueError(f"The line ({x1},{y1})→({x2},{y2}) lies outside this stream's {width}x{height} "
                             f"frames, so nothing could cross it: {fix}.")
    if zone is not None:
        xs, ys = [p[0] for p in zone], [p[1] for p in zone]
        if max(xs) < 0 or max(ys) < 0 or min(xs) >= width or min(ys) >= height:
            raise ValueError(f"The zone ({min(xs)},{min(ys)})–({max(xs)},{max(ys)}) lies outside this stream's "
                             f"{width}x{height} frames, so nothing could enter it: {fix}.")


def past_note(line: list[list[int]] | None, zone: list[list[int]] | None, frame: tuple[int, int] | None) -> str:
    """' (the zone reaches (700,250), past this stream's 480x270 frames: …)' when points given without @WxH lie well
    beyond the frame: read off the main stream for a sub-stream, they count in another place than meant; else ''."""
    if frame is None:
        return ""
    width, height = frame
    # A point on or just past an edge is how people draw "to the edge"; past it by more is another frame's pixels.
    slack_x, slack_y = max(2, 0.02 * width), max(2, 0.02 * height)
    notes = []
    for what, points in (("line", line), ("zone", zone)):
        past = [(x, y) for x, y in points or () if x > width + slack_x or y > height + slack_y]
        if past:
            x, y = max(past, key=lambda p: max(p[0] / width, p[1] / height))
            notes.append(f" (the {what} reaches ({x},{y}), past this stream's {width}x{height} frames: if its points "
                         "were read off a bigger frame, add its size, e.g. @1920x1080, or it counts elsewhere)")
    return "".join(notes)


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
    if max(x1, y1, x2, y2) > MAX_SIDE:  # past any frame (and past what OpenCV can draw): a typo, never a line
        raise ValueError(f"line= points are pixels, 0 to {MAX_SIDE}, not {raw!r}.")
    if (x1, y1) == (x2, y2):
        raise ValueError(f"line= needs two different points, not {raw!r}; e.g. line=320,0,320,480.")
    return [[x1, y1], [x2, y2]]


def middle_line(width: int, height: int) -> list[list[int]]:
    """A vertical line through the centre of a width×height frame, top to bottom."""
    return [[width // 2, 0], [width // 2, height]]


def probe_size(source: str, max_pixels: int) -> tuple[int, int] | None:
    """(width, height) of the frames a pipeline of the source gets, read off its first frame, or None when it cannot
    be read (blocking: run in a thread). Frames over max_pixels are scaled at decode (bot/media/frame_limit.py), so
    points land where they are meant on the frames the pipeline works on (and a huge frame is not decoded here)."""
    size = first_frame_size(source, max_pixels, PROBE_TIMEOUT_MS)
    return bounded_size(*size, max_pixels) if size is not None else None


async def frame_size(source: str, why: str, max_pixels: int) -> tuple[int, int]:
    """(width, height) of the source's frames, read from one (ValueError saying `why` it was needed if not)."""
    size = await asyncio.to_thread(probe_size, source, max_pixels)
    if size is None:
        raise ValueError(f"Could not read a frame to {why}; check the source, or give the points in the stream's "
                         "own pixels without @WIDTHxHEIGHT.")
    return size
