"""Event clips as video files: JPEG frames → MP4 (H.264 through PyAV's libx264, else OpenCV's mp4v), size-bounded; and back."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
# (keep every n-th frame, x264 CRF): each try is smaller than the one before, until the clip fits max_bytes
LADDER = ((1, 28), (1, 34), (2, 38), (4, 42))


@dataclass(frozen=True)
class EncodedClip:
    path: Path
    codec: str  # "h264" | "mp4v"
    fps: float
    frames: int
    bytes: int

    @property
    def seconds(self) -> float:
        return self.frames / self.fps if self.fps else 0.0


def _decode(jpegs: list[bytes]) -> list[Any]:
    """BGR arrays of one size with even sides (H.264's 4:2:0 needs them); unreadable frames are left out."""
    import cv2
    import numpy as np

    decoded = [cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_COLOR) for j in jpegs]
    images: list[Any] = [im for im in decoded if im is not None]
    if not images:
        return []
    h, w = images[0].shape[:2]
    size = (w - w % 2, h - h % 2)
    return [im if (im.shape[1], im.shape[0]) == size else cv2.resize(im, size) for im in images]


def _h264(images: list[Any], fps: float, crf: int, path: Path) -> bool:
    """Write with PyAV/libx264; False when this build has no H.264 encoder."""
    try:
        import av
    except ImportError:
        return False
    h, w = images[0].shape[:2]
    try:
        with av.open(str(path), mode="w", format="mp4", options={"movflags": "faststart"}) as out:
            stream: Any = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000),
                                         options={"crf": str(crf), "preset": "veryfast"})
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            for im in images:
                out.mux(stream.encode(av.VideoFrame.from_ndarray(im, format="bgr24")))
            out.mux(stream.encode(None))
    except (av.FFmpegError, ValueError) as exc:
        log.info("H.264 encoding unavailable (%s); using mp4v", exc)
        return False
    return True


def _mp4v(images: list[Any], fps: float, path: Path) -> bool:
    import cv2

    h, w = images[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"mp4v"), fps, (w, h))
    if not writer.isOpened():
        return False
    for im in images:
        writer.write(im)
    writer.release()
    return True


def encode_clip(jpegs: list[bytes], fps: float, max_bytes: int, path: Path) -> EncodedClip | None:
    """Encode frames at `fps` into `path`; frame rate and quality drop until the file is at most max_bytes.

    None when nothing could be written within the bound (the file is removed). Blocking: call it off the loop.
    """
    images = _decode(jpegs)
    if not images:
        return None
    h264 = True
    for step, crf in LADDER:
        chosen, rate = images[::step], max(fps / step, 0.5)
        if not (h264 and _h264(chosen, rate, crf, path)):
            h264 = False
            if not _mp4v(chosen, rate, path):
                break
        size = path.stat().st_size
        if size <= max_bytes:
            return EncodedClip(path, "h264" if h264 else "mp4v", rate, len(chosen), size)
    log.warning("clip %s not kept: over %d bytes even at the lowest rate and quality", path.name, max_bytes)
    path.unlink(missing_ok=True)
    return None


def read_frames(path: Path, times: list[float]) -> list[tuple[float, Any]]:
    """(seconds into the clip, BGR frame) nearest each requested time; blocking."""
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        fps = cap.get(cv2.CAP_PROP_FPS) or 1.0
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        out: list[tuple[float, Any]] = []
        for t in times:
            index = min(max(round(t * fps), 0), max(count - 1, 0))
            cap.set(cv2.CAP_PROP_POS_FRAMES, index)
            ok, frame = cap.read()
            if ok:
                out.append((index / fps, frame))
        return out
    finally:
        cap.release()


def contact_sheet(frames: list[tuple[str, Any]], columns: int = 3, tile_width: int = 320) -> bytes:
    """Frames side by side in one JPEG, each captioned (e.g. "-4.0 s"), so the model sees a sequence as one image."""
    import cv2
    import numpy as np

    tiles = []
    for label, im in frames:
        h, w = im.shape[:2]
        # A frame of odd shape (a 16x4096 video) must not make a 320x82000 tile: at most 3 tiles' width tall.
        tile = cv2.resize(im, (tile_width, min(max(int(h * tile_width / w), 1), 3 * tile_width)))
        cv2.rectangle(tile, (0, 0), (tile_width, 24), (0, 0, 0), -1)
        cv2.putText(tile, label, (6, 17), cv2.FONT_HERSHEY_SIMPLEX, 0.55, (255, 255, 255), 1, cv2.LINE_AA)
        tiles.append(tile)
    th = max(t.shape[0] for t in tiles)
    blank = np.zeros((th, tile_width, 3), np.uint8)
    tiles = [cv2.copyMakeBorder(t, 0, th - t.shape[0], 0, 0, cv2.BORDER_CONSTANT) for t in tiles]
    tiles += [blank] * (-len(tiles) % columns)
    rows = [np.hstack(tiles[i : i + columns]) for i in range(0, len(tiles), columns)]
    ok, buf = cv2.imencode(".jpg", np.vstack(rows), [cv2.IMWRITE_JPEG_QUALITY, 85])
    if not ok:
        raise ValueError("could not encode the contact sheet")
    return buf.tobytes()
