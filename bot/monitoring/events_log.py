"""The event log: every alert and tier-1 event as one JSON line (WORKSPACE/.state/events.jsonl), bounded in size.

Read by the `get_events` tool, the MCP server, the REST API and the webhooks, so "what happened while I was away?"
is answered from records with numbers. Events never carry frame bytes (only `has_frame`): with `pictures`, an
event's frame becomes its small picture there (bot/monitoring/search/pictures.py), dropped when the log trims it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.backends.faults.kinds import RULES as CAMERA_RULES
from bot.monitoring.rules import KINDS
from bot.monitoring.search.pictures import EventPictures
from bot.storage import records
from workspace.atomic import keep_aside

log = logging.getLogger(__name__)

SOURCE = "vision-agent"
DEFAULT_MAX_BYTES = 5_000_000
ID_DIGITS = 12  # zero-padded, so string order is numeric order (clients may page with `id > last`)
HEALTH_RULES = frozenset({"pipeline_error", "source_dropped", "stalled", "low_fps", "cannot_count", "frames_scaled",
                          "camera_turned", "server_failover"})
HEALTH_RULES |= CAMERA_RULES  # a camera's faults and their ends (video_lost, video_back, picture_frozen, …)
EventListener = Callable[[dict[str, Any]], None]
# The model's look at an alert already posted (verified alerts, verify=on): its own event, `about` that alert's id,
# so a webhook receiver hears the verdict too; reports and searches read it as words about that alert, not an alert.
CHECKED = "alert_checked"


def event_type_of(rule: str) -> str:
    """The event type of an alert's rule id: 'line_crossed', 'count_over:person>3' -> 'count_over', 'stalled' -> 'health'."""
    if rule in HEALTH_RULES:
        return "health"
    if rule == CHECKED:
        return CHECKED
    kind = rule.split(":", 1)[0].split(">", 1)[0]
    if kind in KINDS or kind == "heartbeat":
        return kind
    return "alert"


class EventLog:
    """Append-only JSONL log, thread-safe (monitor events arrive on pipeline threads), trimmed over `max_bytes`."""

    def __init__(self, path: Path, redact: Callable[[str], str] | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, pictures: EventPictures | None = None) -> None:
        self.path = Path(path)
        self.pictures = pictures
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._redact = redact
        self.max_bytes = max(1024, max_bytes)
        self._lock = threading.Lock()
        self._listeners: list[EventListener] = []
        if self.path.exists() and not self.path.is_file():  # a directory (or worse) where the log should be
            kept = keep_aside(self.path)
            records.note(f"{self.path.name} was not a file; kept as {kept.name}, starting it empty")
        self._seq = self._last_seq()
        self._end_line()

    def add_listener(self, listener: EventListener) -> None:
        """Call `listener(event)` after each append (on the appending thread; it must not block)."""
        if listener not in self._listeners:
            self._listeners.append(listener)

    def remove_listener(self, listener: EventListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        """Record one event; adds `id`, `time` and `source` if missing. Returns the stored event. Its `frame` (JPEG
        bytes) is not logged: it becomes the event's picture (of its `box`, fractions of the frame) when pictures are
        kept."""
        frame = event.get("frame")
        ev = self._clean(event)
        with self._lock:
            self._seq += 1
            ev["id"] = str(self._seq).zfill(ID_DIGITS)
            line = json.dumps(ev, ensure_ascii=False, default=str) + "\n"
            try:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(line)
                if self.path.stat().st_size > self.max_bytes:
                    self._trim()
            except OSError:  # a full disk must not stop alerts
                log.exception("could not write the event log")
        if self.pictures is not None and isinstance(frame, bytes | bytearray) and frame:
            self.pictures.put(ev["id"], bytes(frame), _box(ev.get("box")))
        for listener in list(self._listeners):
            try:
                listener(dict(ev))
            except Exception:  # one broken listener must not stop the others or the monitor
                log.exception("event listener failed")
        return ev

    def query(self, since: float | None = None, camera: str | None = None, limit: int = 100,
              event_type: str | None = None) -> list[dict[str, Any]]:
        """Events with time >= since, of one camera and type if given; the newest `limit`, newest last."""
        out = [ev for ev in self._read()
               if (since is None or float(ev.get("time", 0)) >= since)
               and (camera is None or ev.get("camera") == camera)
               and (event_type is None or ev.get("event_type") == event_type)]
        # by event time: a held event is written on its pipeline thread before an earlier one sent from the loop
        out.sort(key=lambda ev: float(ev.get("time", 0)))
        return out[-limit:] if limit > 0 else []

    def tail(self, offset: int) -> tuple[list[dict[str, Any]], int] | None:
        """The events written after byte `offset` (whole lines only) and the offset to read from next; None when the
        file is shorter than `offset` (trimmed or replaced: read it all again). A reader that follows the log (the
        search index) reads what is new, not the whole log every time."""
        with self._lock:
            try:
                with self.path.open("rb") as f:
                    size = f.seek(0, os.SEEK_END)
                    if size < offset:
                        return None
                    f.seek(offset)
                    raw = f.read()
            except OSError:
                return [], offset
        end = raw.rfind(b"\n") + 1  # a line still being written waits for the next read
        lines = raw[:end].decode("utf-8", errors="replace").splitlines()
        return [ev for ev in map(_valid, lines) if ev is not None], offset + end

    @property
    def last_id(self) -> int:
        """The id the newest event got (0: none yet); ids only grow, also across restarts."""
        return self._seq

    def page(self, after: int, limit: int = 100, camera: str | None = None, event_type: str | None = None,
             since: float | None = None) -> tuple[list[dict[str, Any]], int, bool]:
        """(events, next, more): the oldest `limit` events with an id above `after` (and of that camera, type, time),
        in id order; `next` is the id to pass as `after` for the page after this one, `more` whether one is waiting.

        Ids are given and written in one order under the lock, so a reader never sees an id before a smaller one:
        paging by `next` while events keep arriving repeats none and skips none (unless trimming removed them first).
        """
        scanned = after
        out: list[dict[str, Any]] = []
        for ev in self._read():
            ident = str(ev["id"])
            if not ident.isdigit() or int(ident) <= after:
                continue
            if len(out) >= limit:
                return out, scanned, True
            scanned = int(ident)  # every event up to here was looked at: the next page starts after it
            if ((camera is None or ev.get("camera") == camera)
                    and (event_type is None or ev.get("event_type") == event_type)
                    and (since is None or float(ev["time"]) >= since)):
                out.append(ev)
        return out, scanned, False

    # internals ------------------------------------------------------------
    def _clean(self, event: dict[str, Any]) -> dict[str, Any]:
        ev = {k: v for k, v in event.items() if not isinstance(v, (bytes, bytearray, memoryview))}
        if any(isinstance(v, (bytes, bytearray, memoryview)) for v in event.values()):
            ev["has_frame"] = True  # frames stay out of the log: it is read by clients, sized, and kept
        ev.setdefault("source", SOURCE)
        ev.setdefault("time", time.time())
        if self._redact is not None:
            ev = {k: self._redact(v) if isinstance(v, str) else v for k, v in ev.items()}
        return ev

    def _read(self) -> list[dict[str, Any]]:
        with self._lock:
            try:
                raw = self.path.read_text(encoding="utf-8", errors="replace")
            except OSError:  # gone, or made unreadable from outside: no events rather than a broken answer
                return []
        return [ev for ev in map(_valid, raw.splitlines()) if ev is not None]

    def _last_seq(self) -> int:
        """The highest id in the file, whatever its last line holds (torn, garbage, an id out of order)."""
        try:
            raw = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return 0
        ids = [int(ev["id"]) for ev in map(_valid, raw.splitlines()) if ev is not None and ev["id"].isdigit()]
        return max(ids, default=0)

    def _end_line(self) -> None:
        """A file cut mid-line by a crash gets its newline, so the next event is not glued to the torn one."""
        try:
            with self.path.open("rb+") as f:
                if f.seek(0, os.SEEK_END) and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
                    f.write(b"\n")
        except OSError:
            pass

    def _trim(self) -> None:  # holding self._lock
        """Keep the newest lines that fit in half of max_bytes (halving: trims are rare, not on every append)."""
        lines = self.path.read_bytes().splitlines(keepends=True)
        keep: list[bytes] = []
        size = 0
        for line in reversed(lines):
            if size + len(line) > self.max_bytes // 2:
                break
            keep.append(line)
            size += len(line)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(b"".join(reversed(keep)))
        os.replace(tmp, self.path)  # atomic: a reader sees the old file or the new one
        oldest = next((ev["id"] for ev in map(_valid, (ln.decode("utf-8", "replace") for ln in reversed(keep)))
                       if ev is not None), None)
        if self.pictures is not None:
            self.pictures.prune(oldest or str(self._seq + 1).zfill(ID_DIGITS))  # pictures go with their events


def _box(raw: Any) -> tuple[float, float, float, float] | None:
    """An event's `box` (four fractions of the frame) as the picture's crop, or None (the whole frame)."""
    if isinstance(raw, list | tuple) and len(raw) == 4 and all(isinstance(v, int | float) for v in raw):
        x1, y1, x2, y2 = (float(v) for v in raw)
        if 0 <= x1 < x2 <= 1 and 0 <= y1 < y2 <= 1:
            return x1, y1, x2, y2
    return None


_TEXT_FIELDS = ("source", "event_type", "camera", "rule", "text", "pipeline_id", "held", "seen", "summary")


def _valid(line: str) -> dict[str, Any] | None:
    """One line as an event readers can rely on, or None: torn, not JSON, not an object, no usable time or id.

    Readers (get_events, MCP, /api/events, webhooks) sort by `time`, page by `id` and print the text fields, so a
    line whose fields have the wrong type is made to fit or dropped here rather than breaking them.
    """
    try:
        ev = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(ev, dict):
        return None
    try:
        at = float(ev.get("time"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    ident = ev.get("id")
    if not math.isfinite(at) or isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    ev["time"], ev["id"] = at, str(ident).zfill(ID_DIGITS) if isinstance(ident, int) else ident
    for key in _TEXT_FIELDS:
        if key in ev and ev[key] is not None and not isinstance(ev[key], str):
            ev[key] = str(ev[key])
    if not isinstance(ev.get("counts", {}), dict):
        ev.pop("counts")
    return ev
