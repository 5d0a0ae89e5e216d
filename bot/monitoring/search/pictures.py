"""Each event's small picture (WORKSPACE/.state/event_pictures/ID.jpg): the crop of its main object, or the frame.

What a search answer shows for a moment, so it must outlive the alert frames (bot/monitoring/alert_frames.py keeps
the newest 200 posted ones) and cover held events too, yet stay small: a crop at most `SIDE` px, JPEG quality 70
(about 5-15 KB), the newest ones within `max_bytes` on disk, and none older than the event log's oldest line (the
log prunes them when it trims). Made on one worker thread: the event is logged at once, its picture follows.
"""

from __future__ import annotations

import io
import logging
import queue
import threading
from collections import OrderedDict
from pathlib import Path

from PIL import Image

from workspace.atomic import keep_aside, write_atomic

log = logging.getLogger(__name__)

SIDE = 320  # longest side of a kept picture
QUALITY = 70
MARGIN = 0.25  # of the box's size, added around it: the crop shows where it stood, not only its outline
MIN_CROP = 96  # px of the source frame: a tiny box is shown with some of the scene around it
DEFAULT_MAX_BYTES = 40_000_000  # ~4,000 pictures at ~10 KB
QUEUE = 256  # pictures waiting for the worker; beyond, one is skipped (the event keeps its words)
SUFFIX = ".jpg"
Box = tuple[float, float, float, float]


def small_picture(frame: bytes, box: Box | None) -> bytes:
    """The crop of `box` (fractions of the frame: x1, y1, x2, y2 in 0..1, with a margin) or the whole frame, at
    most SIDE px, as JPEG."""
    src = Image.open(io.BytesIO(frame))
    width, height = src.size
    region = (0, 0, width, height) if box is None else _around(box, width, height)
    need = min(1.0, SIDE / max(1, region[2] - region[0], region[3] - region[1]))
    src.draft("RGB", (int(width * need) + 1, int(height * need) + 1))  # a JPEG decodes at 1/2..1/8 for less
    s = src.width / max(1, width)
    x1, y1, x2, y2 = (int(v * s) for v in region)
    im = src.convert("RGB").crop((x1, y1, x2, y2))
    im.thumbnail((SIDE, SIDE))
    out = io.BytesIO()
    im.save(out, "JPEG", quality=QUALITY, optimize=True)
    return out.getvalue()


def _around(box: Box, width: int, height: int) -> tuple[int, int, int, int]:
    """The box (fractions of the frame) with its margin, in pixels of a frame this size."""
    x1, y1, x2, y2 = box[0] * width, box[1] * height, box[2] * width, box[3] * height
    grow = max(1.0, MIN_CROP / max(1.0, x2 - x1, y2 - y1))  # a tiny box: more of the scene, its shape kept
    half_w, half_h = ((x2 - x1) * grow * (0.5 + MARGIN), (y2 - y1) * grow * (0.5 + MARGIN))
    half_w, half_h = max(half_w, 0.6 * half_h), max(half_h, 0.6 * half_w)  # a person's crop shows where they walk
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    region = (max(0, int(cx - half_w)), max(0, int(cy - half_h)),
              min(width, int(cx + half_w) + 1), min(height, int(cy + half_h) + 1))
    if region[2] <= region[0] or region[3] <= region[1]:  # a box outside the frame: show the frame
        return 0, 0, width, height
    return region


class EventPictures:
    """A bounded folder of small JPEGs named by event id (zero-padded: name order is id order)."""

    def __init__(self, folder: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = Path(folder)
        self.max_bytes = max(10_000, max_bytes)
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, int] = OrderedDict()  # id -> bytes on disk, oldest first
        self._total = 0
        self._todo: queue.Queue[tuple[str, bytes, Box | None] | None] = queue.Queue(QUEUE)
        self._idle = threading.Condition()
        self._busy = 0
        self.skipped = 0
        self._floor = ""  # events below this id were trimmed from the log: their pictures are not made
        self._worker: threading.Thread | None = None
        self._load()

    def _load(self) -> None:
        """What a restart finds; a file where the folder should be is set aside (stored data never stops start-up)."""
        if self.folder.exists() and not self.folder.is_dir():
            kept = keep_aside(self.folder)
            log.warning("%s was not a folder; kept as %s", self.folder, kept.name)
        if not self.folder.is_dir():
            return
        for p in sorted(self.folder.glob(f"*{SUFFIX}")):
            try:
                self._sizes[p.stem] = p.stat().st_size
            except OSError:
                continue
        self._total = sum(self._sizes.values())

    # writing ------------------------------------------------------------------------------------------------------
    def put(self, event_id: str, frame: bytes, box: Box | None = None) -> bool:
        """Queue the event's picture; False when the worker is too far behind (that event gets none)."""
        if not event_id.isdigit() or not frame:
            return False
        with self._idle:
            try:
                self._todo.put_nowait((event_id, frame, box))
            except queue.Full:
                self.skipped += 1
                return False
            self._busy += 1
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._run, name="event-pictures", daemon=True)
                self._worker.start()
        return True

    def _run(self) -> None:
        while True:
            try:
                item = self._todo.get(timeout=5.0)
            except queue.Empty:
                with self._idle:
                    if self._todo.empty():
                        self._worker = None
                        return
                continue
            if item is None:
                return
            try:
                self._store(*item)
            except Exception as exc:  # noqa: BLE001 - a bad frame or a full disk costs that picture only
                log.warning("event picture %s not kept: %s", item[0], exc)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def _store(self, event_id: str, frame: bytes, box: Box | None) -> None:
        if event_id < self._floor:
            return  # the log trimmed its event while it waited
        data = small_picture(frame, box)
        with self._lock:
            if event_id < self._floor:
                return
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self.folder / f"{event_id}{SUFFIX}", data)
            self._total += len(data) - self._sizes.pop(event_id, 0)
            self._sizes[event_id] = len(data)
            while self._total > self.max_bytes and len(self._sizes) > 1:
                old, size = self._sizes.popitem(last=False)
                self._total -= size
                (self.folder / f"{old}{SUFFIX}").unlink(missing_ok=True)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued picture is stored (tests, a bench, shutting down); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def prune(self, oldest_id: str) -> int:
        """Drop the pictures of events older than `oldest_id` (the event log trimmed them); how many went."""
        with self._lock:
            self._floor = max(self._floor, oldest_id)
            gone = [k for k in self._sizes if k < oldest_id]
            for k in gone:
                self._total -= self._sizes.pop(k)
                (self.folder / f"{k}{SUFFIX}").unlink(missing_ok=True)
        return len(gone)

    # reading ------------------------------------------------------------------------------------------------------
    def get(self, event_id: str) -> bytes | None:
        if not event_id.isdigit():
            return None
        try:
            return (self.folder / f"{event_id}{SUFFIX}").read_bytes()
        except OSError:
            return None

    def has(self, event_id: str) -> bool:
        with self._lock:
            return event_id in self._sizes

    @property
    def total_bytes(self) -> int:
        return self._total
