"""What each pipeline has counted so far (line in/out, zone dwell), kept from its results so status shows it and a
file that runs out can report it; and the pipelines that ended, with who to tell."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from bot.backends.base import InferenceResult, PipelineHandle
from bot.backends.counting import line_totals


@dataclass(frozen=True)
class Tally:
    """A pipeline's figures so far: None for what it does not measure (no line: no in/out; no zone: no dwell)."""

    count_in: int | None = None
    count_out: int | None = None
    in_zone: int | None = None  # objects in the zone in the newest frame
    entered: int = 0  # distinct tracked objects seen in the zone
    longest: float = 0.0  # the longest any object stayed in the zone, seconds

    def text(self) -> str:
        """'counted in 12 / out 9; zone: 2 in it now, 7 entered, longest 34 s', or '' when nothing is counted."""
        parts = []
        if self.count_in is not None or self.count_out is not None:
            parts.append(f"counted in {self.count_in or 0} / out {self.count_out or 0}")
        if self.in_zone is not None:
            parts.append(f"zone: {self.in_zone} in it now, {self.entered} entered, longest {self.longest:.0f} s")
        return "; ".join(parts)


@dataclass
class _Dwell:
    seen: set[tuple[str, int]] = field(default_factory=set)
    longest: float = 0.0


class Tallies:
    """A result listener (pipeline threads) keeping every pipeline's Tally; read from any thread."""

    def __init__(self) -> None:
        self._tallies: dict[str, Tally] = {}
        self._dwell: dict[str, _Dwell] = {}
        self._lock = threading.Lock()

    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        totals = line_totals(result.values)  # the line counter's own running totals
        timed = [d for d in result.detections if d.time_in_zone is not None]
        if not totals and not timed:
            return
        pid = handle.pipeline_id
        with self._lock:
            tally = self._tallies.get(pid, Tally())
            if totals:
                tally = replace(tally, count_in=int(totals.get("count_in", 0)), count_out=int(totals.get("count_out", 0)))
            if timed:
                dwell = self._dwell.setdefault(pid, _Dwell())
                inside = [d for d in timed if d.time_in_zone]  # objects outside the zone carry 0 s
                dwell.seen.update((d.class_name, d.tracker_id) for d in inside if d.tracker_id is not None)
                dwell.longest = max([dwell.longest, *(d.time_in_zone or 0.0 for d in inside)])
                tally = replace(tally, in_zone=len(inside), entered=len(dwell.seen), longest=dwell.longest)
            self._tallies[pid] = tally

    def get(self, pipeline_id: str) -> Tally | None:
        with self._lock:
            return self._tallies.get(pipeline_id)


@dataclass(frozen=True)
class Origin:
    """Where a start was asked, so the asker hears there when its file runs out (None: not known)."""

    session_key: str | None = None  # the conversation: `slack:TEAM:CHANNEL:THREAD`, `cli:NAME`
    user_id: str | None = None
    channel_id: str | None = None


@dataclass(frozen=True)
class Ended:
    """A pipeline whose video file ran out: its last handle, what it counted, and where it was started from."""

    handle: PipelineHandle
    tally: Tally | None
    origin: Origin | None

    def line(self) -> str:
        """'vtest finished (the file ran out after 795 frames): counted in 17 / out 20.' — one line, any surface."""
        h = self.handle
        counted = self.tally.text() if self.tally is not None else ""
        return f"{h.name} finished (the file ran out after {h.frames} frames)" + (f": {counted}." if counted else ".")
