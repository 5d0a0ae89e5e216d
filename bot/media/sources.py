"""What a video reference is: a live source (webcam index, stream URL) or a file; the one check every path uses."""

from __future__ import annotations


def is_live(reference: str) -> bool:
    """A webcam index or a stream/camera URL (any scheme but file://), as opposed to a video file.

    Live sources are muted to pause, read newest-frame-first, and 'dropped' when they end; files are done.
    """
    ref = str(reference).strip()
    return ref.isdigit() or ("://" in ref and not ref.lower().startswith("file://"))


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
