"""The frames of recent alerts by alert id (WORKSPACE/.state/alert_frames/ID.jpg): what a webhook's frame_url shows.

The router keeps the frame of every alert it sends (not of held ones: a cooldown can swallow many crossings a
minute). Retention: the newest `KEEP` frames; each new one deletes the oldest beyond that, so a receiver has until
`KEEP` more alerts with a frame were sent (hours at usual alert rates) to fetch one. On disk, so a restart keeps them
and `vision-agent api` in another process serves what `serve` stored.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from pathlib import Path

from workspace.atomic import write_atomic

KEEP = 200  # at ~50-100 KB per annotated JPEG: 10-20 MB at most
SUFFIX = ".jpg"
_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")  # alert ids are 12 hex digits; nothing else may name a file here


class AlertFrames:
    """A bounded folder of JPEGs named by alert id; `put` from the router, `get` from the REST API."""

    def __init__(self, folder: Path, keep: int = KEEP) -> None:
        self.folder = Path(folder)
        self.keep = max(1, keep)
        self._lock = threading.Lock()  # puts run in worker threads (asyncio.to_thread)
        self._order: deque[str] = deque(self._stored())  # oldest first

    def _stored(self) -> list[str]:
        """Ids already on disk, oldest first (what a restart finds)."""
        if not self.folder.is_dir():
            return []
        files = sorted(self.folder.glob(f"*{SUFFIX}"), key=lambda p: (p.stat().st_mtime_ns, p.name))
        return [p.stem for p in files]

    def path_of(self, alert_id: str) -> Path | None:
        """Where the frame of `alert_id` lives, or None when the id could not be an alert's (no path tricks)."""
        return self.folder / f"{alert_id}{SUFFIX}" if _ID.fullmatch(alert_id) else None

    def put(self, alert_id: str, frame: bytes) -> bool:
        """Store the frame (atomically: a reader never sees half a JPEG), then drop the oldest beyond `keep`."""
        path = self.path_of(alert_id)
        if path is None or not frame:
            return False
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, frame)
            if alert_id in self._order:
                self._order.remove(alert_id)
            self._order.append(alert_id)
            while len(self._order) > self.keep:
                old = self.folder / f"{self._order.popleft()}{SUFFIX}"
                old.unlink(missing_ok=True)
        return True

    def get(self, alert_id: str) -> bytes | None:
        """The stored frame, or None (unknown id, no frame, or older than the newest `keep`)."""
        path = self.path_of(alert_id)
        try:
            return path.read_bytes() if path is not None else None
        except FileNotFoundError:
            return None
