"""The day's observation timeline per camera: counts on change, crossings, stays in a zone — debounced and bounded.

Written to the daily memory log (memory/YYYY-MM-DD.md, one section per camera) so that "what happened on cam1
today?" and the daily summary can be answered in numbers. One writer and one reader of the line formats: this module.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.backends.base import InferenceResult
from bot.backends.counting import line_totals
from bot.monitoring.wording import class_of, describe_counts, object_name

if TYPE_CHECKING:
    from workspace.memory import MemoryStore

log = logging.getLogger(__name__)

# Debounce: flickering detectors change the count every few frames; the log must not become a frame dump.
NOTABLE_SECONDS = 60.0  # a class appears or leaves, or the total moves by 2+: at most one line a minute
ANY_CHANGE_SECONDS = 300.0  # a count moving by one: at most one line in five minutes
BIG_CHANGE_SECONDS = 10.0  # the total moves by 3+ and by half: logged at once (flicker guard only)
CROSSING_SECONDS = 60.0  # crossings are summed over a minute
DWELL_MIN_SECONDS = 3.0  # shorter stays in a zone are passers-by, not worth a line
DWELL_GONE_SECONDS = 10.0  # an object unseen this long has left the zone
MAX_LINES = 400  # per camera per day, alerts included; then one line says so and the rest is only counted


@dataclass
class _Cam:
    day: str = ""
    lines: int = -1  # -1: not yet counted from the day's file
    dropped: int = 0
    logged: dict[str, int] | None = None  # the counts of the last "seen" line
    logged_at: float = 0.0
    logged_text: str = ""  # a flickering detector repeats the same line: written once
    last: dict[str, int] = field(default_factory=dict)  # the counts of the latest result
    peak: dict[str, int] = field(default_factory=dict)  # the most of each class since that line
    totals: dict[str, float] = field(default_factory=dict)  # line counter totals already written
    pending: dict[str, float] = field(default_factory=dict)  # line counter totals not yet written
    crossed_at: float = 0.0
    stays: dict[Any, tuple[str, float, float]] = field(default_factory=dict)  # key -> (name, seconds, last seen)


class Timeline:
    """Fed every pipeline result (pipeline threads) and every alert; writes a few lines per camera to the day's log."""

    def __init__(self, memory: MemoryStore, clock: Callable[[], float], max_lines: int = MAX_LINES) -> None:
        self.memory, self._clock, self.max_lines = memory, clock, max_lines
        self._cams: dict[str, _Cam] = {}
        self._lock = threading.Lock()

    def observe(self, camera: str, result: InferenceResult) -> None:
        """Take one result: maybe a counts line, a crossings line, a line for stays in the zone that ended."""
        now = self._clock()
        with self._lock:
            cam = self._cams.setdefault(camera, _Cam())
            for text in (self._counts(cam, result.counts(), now), self._crossings(cam, result, now),
                         self._stays(cam, result, now)):
                if text:
                    self._write(camera, cam, text)

    def finish(self, camera: str) -> None:
        """The pipeline ended: write what was still waiting (crossings, stays) so the day's log is complete."""
        now = self._clock()
        with self._lock:
            cam = self._cams.get(camera)
            if cam is None:
                return
            for text in (self._counts(cam, cam.last, now, force=True), self._crossings(cam, None, now, force=True),
                         self._stays(cam, None, now, force=True)):
                if text:
                    self._write(camera, cam, text)
            cam.logged = None  # a restarted pipeline starts with a fresh "seen" line

    def note(self, camera: str, text: str) -> None:
        """An alert or any other event line, under the same daily cap."""
        with self._lock:
            self._write(camera, self._cams.setdefault(camera, _Cam()), text)

    # what to write --------------------------------------------------------
    def _counts(self, cam: _Cam, counts: dict[str, int], now: float, force: bool = False) -> str | None:
        cam.last = counts
        cam.peak = {c: max(n, cam.peak.get(c, 0)) for c, n in {**cam.peak, **counts}.items()}
        before = cam.logged
        if before is not None:
            unchanged = counts == before and cam.peak == counts
            if unchanged or (not force and now - cam.logged_at < _wait(before, counts)):
                return None
        text = f"seen: {describe_counts(counts)}"
        if before is not None and any(n > counts.get(c, 0) for c, n in cam.peak.items()):
            text += f" (at most {describe_counts(cam.peak)} since the last line)"
        repeat, cam.logged_text = text == cam.logged_text, text
        cam.logged, cam.logged_at, cam.peak = dict(counts), now, dict(counts)
        return None if repeat else text

    def _crossings(self, cam: _Cam, result: InferenceResult | None, now: float, force: bool = False) -> str | None:
        totals = line_totals(result.values) if result is not None else {}
        if totals:
            if not cam.pending and not cam.totals:
                cam.totals = dict(totals)  # the first totals are the baseline, not crossings
            cam.pending = totals
        moved = {k: int(v - cam.totals.get(k, 0.0)) for k, v in cam.pending.items() if v > cam.totals.get(k, 0.0)}
        if not moved or (not force and now - cam.crossed_at < CROSSING_SECONDS):
            return None
        cam.totals, cam.crossed_at = dict(cam.pending), now
        moves = ", ".join(f"{k.removeprefix('count_')} +{n}" for k, n in sorted(moved.items()))
        return (f"crossed: {moves} (totals in {int(cam.totals.get('count_in', 0))} / "
                f"out {int(cam.totals.get('count_out', 0))})")

    def _stays(self, cam: _Cam, result: InferenceResult | None, now: float, force: bool = False) -> str | None:
        ended: list[tuple[str, float]] = []
        for d in result.detections if result is not None else ():
            if d.time_in_zone is None:
                continue
            key = d.tracker_id if d.tracker_id is not None else d.class_name
            if d.time_in_zone > 0:
                cam.stays[key] = (object_name(d), d.time_in_zone, now)
            elif key in cam.stays:  # back outside: the block reset its time
                ended.append(cam.stays.pop(key)[:2])
        for key, (name, secs, seen) in list(cam.stays.items()):
            if force or now - seen > DWELL_GONE_SECONDS:
                ended.append((name, secs))
                del cam.stays[key]
        long = sorted((s for s in ended if s[1] >= DWELL_MIN_SECONDS), key=lambda s: -s[1])
        if not long:
            return None
        return "dwell: " + ", ".join(f"{name} stayed {secs:.0f} s in the zone" for name, secs in long)

    # writing ----------------------------------------------------------------
    def _write(self, camera: str, cam: _Cam, text: str) -> None:  # holding self._lock
        day = self.memory.today()
        if cam.day != day:
            cam.day, cam.dropped = day, 0
            cam.lines = len(self.memory.observations_by_camera(day).get(camera, []))  # after a restart too
        if cam.lines > self.max_lines:
            cam.dropped += 1
            return
        if cam.lines == self.max_lines:
            text = (f"timeline full: {self.max_lines} lines today; later counts, crossings and alerts on this "
                    "camera are not logged until tomorrow (alerts are still sent)")
        try:
            self.memory.store(text, "observation", camera_id=camera)
            cam.lines += 1
        except OSError:
            log.exception("could not write the observation log")


def _wait(before: dict[str, int], counts: dict[str, int]) -> float:
    """How long after the last counts line this change may be written (bigger changes sooner)."""
    total = sum(before.values())
    delta = abs(sum(counts.values()) - total)
    if delta >= max(3, total / 2):
        return BIG_CHANGE_SECONDS
    if {c for c, n in counts.items() if n} != {c for c, n in before.items() if n} or delta >= 2:
        return NOTABLE_SECONDS
    return ANY_CHANGE_SECONDS


# reading ----------------------------------------------------------------------
_SEEN = re.compile(r"^(?:\d{2}:\d{2}:\d{2} )?seen: (?P<now>[^(]*)(?:\(at most (?P<peak>[^)]*) since)?")
_COUNT = re.compile(r"(\d+) ([^,]+)")
_CROSS = re.compile(r"^(?:\d{2}:\d{2}:\d{2} )?crossed: (?P<moves>[^(]*)")
_STAY = re.compile(r"([^,:]+?) stayed (\d+) s in the zone")
_ALERT = re.compile(r"^(?:\d{2}:\d{2}:\d{2} )?(?:HEARTBEAT )?ALERT")


def digest(bullets: list[str], alerts: bool = True) -> str:
    """One camera's day in numbers, from its log lines: peak counts, crossings, stays in the zone (and alerts)."""
    peak: dict[str, int] = {}
    moves = {"in": 0, "out": 0}
    stays: list[tuple[int, str]] = []
    n_alerts = 0
    for line in bullets:
        if m := _SEEN.match(line):
            for part in filter(None, (m["now"], m["peak"])):
                for n, what in _COUNT.findall(part):
                    cls = class_of(what.strip())
                    peak[cls] = max(peak.get(cls, 0), int(n))
        elif m := _CROSS.match(line):
            for side, n in re.findall(r"(in|out) \+(\d+)", m["moves"]):
                moves[side] += int(n)
        elif "dwell: " in line:
            stays += [(int(secs), name.strip()) for name, secs in _STAY.findall(line.split("dwell: ", 1)[1])]
        elif _ALERT.match(line):
            n_alerts += 1
    parts = [f"at most {describe_counts(peak)} at once" if any(peak.values()) else "nothing counted"]
    if any(moves.values()):
        parts.append(f"line crossings in {moves['in']} / out {moves['out']}")
    if stays:
        secs, name = max(stays)
        parts.append(f"{len(stays)} stays in the zone (longest {name} {secs} s)")
    if alerts:
        parts.append(f"{n_alerts} alerts")
    return "; ".join(parts)
