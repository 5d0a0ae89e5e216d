"""What a video reference is: a live source (webcam index, stream URL) or a file; the one check every path uses."""

from __future__ import annotations

from typing import Any

PROBE_TIMEOUT_MS = 5000  # opening a source to read its size: a camera that does not answer must not hold a start


def is_live(reference: str) -> bool:
    """A webcam index or a stream/camera URL (any scheme but file://), as opposed to a video file.

    Live sources are muted to pause, read newest-frame-first, and 'dropped' when they end; files are done.
    """
    ref = str(reference).strip()
    return ref.isdigit() or ("://" in ref and not ref.lower().startswith("file://"))


def buffer_strategies(reference: str) -> tuple[str, str]:
    """(filling, consumption) of the source's frame buffer, InferencePipeline's names, for every backend: a file's
    every frame, in order (WAIT, LAZY); a camera's newest frame (DROP_OLDEST, EAGER). Not the library's default for
    streams (ADAPTIVE_DROP_OLDEST): it paces decoding against the rate the stream declares, and FFmpeg declares an
    MJPEG camera 25 fps whatever it sends, so a 5 fps camera was cut to 0.6 fps without a word."""
    return ("DROP_OLDEST", "EAGER") if is_live(reference) else ("WAIT", "LAZY")


def capture_reference(reference: str) -> str | int:
    """What OpenCV / InferencePipeline open: a webcam index as an int, anything else as given."""
    ref = str(reference).strip()
    return int(ref) if ref.isdigit() else reference


def file_fps(path: str) -> float | None:
    """The frame rate a video file declares, or None if it cannot be read or declares none (blocking)."""
    import cv2  # only when a file's rate is asked for: cv2 takes a moment to import

    cap = cv2.VideoCapture(str(path))
    try:
        fps = float(cap.get(cv2.CAP_PROP_FPS)) if cap.isOpened() else 0.0
    finally:
        cap.release()
    return fps if 0 < fps < 1000 else None


def file_frame_size(path: str) -> tuple[int, int] | None:
    """(width, height) of a video file's frames, or None if it cannot be read (blocking)."""
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))) if cap.isOpened() else (0, 0)
    finally:
        cap.release()
    return size if size[0] > 0 and size[1] > 0 else None


def _open(reference: str, timeout_ms: int) -> Any:
    """An OpenCV capture of the source, opening and reading within timeout_ms each (blocking)."""
    import cv2

    params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, timeout_ms, cv2.CAP_PROP_READ_TIMEOUT_MSEC, timeout_ms]
    return cv2.VideoCapture(capture_reference(reference), cv2.CAP_ANY, params)


def _header_size(cap: Any) -> tuple[int, int] | None:
    import cv2

    width, height = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
    return (width, height) if width > 0 and height > 0 else None


def header_frame_size(reference: str, timeout_ms: int = PROBE_TIMEOUT_MS) -> tuple[int, int] | None:
    """(width, height) a source's stream header declares, nothing decoded; None when it cannot be opened from here
    or declares none (blocking)."""
    cap = _open(reference, timeout_ms)
    try:
        return _header_size(cap) if cap.isOpened() else None
    finally:
        cap.release()


def first_frame_size(reference: str, max_pixels: int | None = None,
                     timeout_ms: int = PROBE_TIMEOUT_MS) -> tuple[int, int] | None:
    """(width, height) of the source's first frame, or None when it gives none (blocking: run in a thread).

    A stream whose header declares more than max_pixels is not decoded here either (432 MB for one 12000x12000
    frame): one compressed frame read shows it gives frames (OpenCV's raw mode), and the header says its size.
    """
    import cv2

    cap = _open(reference, timeout_ms)
    try:
        if not cap.isOpened():
            return None
        size = _header_size(cap)
        if size and max_pixels is not None and size[0] * size[1] > max_pixels and cap.set(cv2.CAP_PROP_FORMAT, -1):
            return size if cap.grab() else None
        ok, frame = cap.read()
        if not ok or frame is None:
            return None
        height, width = frame.shape[:2]
        return int(width), int(height)
    finally:
        cap.release()
