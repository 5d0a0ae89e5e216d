"""Line crossings that survive short gaps: each tracker id's last side of the line, kept for a time window.

supervision's LineZone (inference's line_counter blocks) forgets a track's side once it is missing from two
processed frames, so a person the detector or tracker loses for a moment right at the line is never counted
(4 of the 7 crossings missed on vtest.avi, bench/line_count.py). Here an id's side is remembered for
`memory_seconds` after it was last seen (then forgotten: memory stays bounded), and a crossing is a change of
that side: into the side on the right of the line's direction is "in", as LineZone counts it. Hysteresis: an id's
first crossing counts as soon as its anchor is over the line (people lost right after it are still counted), but
after a crossing it only changes sides again by getting more than its margin (px, given per detection) past the
line, so a box jittering on the line counts once.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MAX_TRACKS = 10_000  # ids remembered at once per line, whatever the window: a flood of ids cannot grow memory


@dataclass
class _Seen:
    side: bool | None  # True: the "in" side; None: only seen exactly on the line so far
    time: float
    crossed: bool = False  # counted once: from now on a change of side must clear the margin


class LineCrossings:
    """Counts tracked anchors crossing the segment start→end; one instance per line and video."""

    def __init__(self, start: tuple[float, float], end: tuple[float, float], memory_seconds: float = 3.0,
                 max_tracks: int = MAX_TRACKS) -> None:
        self.start = np.asarray(start, dtype=np.float64)
        direction = np.asarray(end, dtype=np.float64) - self.start
        self.length = float(np.hypot(*direction))
        if self.length == 0:
            raise ValueError("a counting line needs two different points")
        self.unit = direction / self.length
        self.memory_seconds = max(float(memory_seconds), 0.0)
        self.max_tracks = max(int(max_tracks), 1)
        self.in_count = 0
        self.out_count = 0
        self._tracks: OrderedDict[int, _Seen] = OrderedDict()  # oldest sighting first

    def update(self, anchors: npt.ArrayLike, tracker_ids: npt.ArrayLike, now: float,
               margins: npt.ArrayLike = 0.0) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """Feed one frame's anchors (N×2 px), tracker ids and margins (px) at time `now` (s); who crossed in / out."""
        points = np.asarray(anchors, dtype=np.float64).reshape(-1, 2)
        ids = np.asarray(tracker_ids).reshape(-1)
        margin = np.broadcast_to(np.asarray(margins, dtype=np.float64), ids.shape)
        crossed_in = np.zeros(len(ids), dtype=bool)
        crossed_out = np.zeros(len(ids), dtype=bool)
        offsets = points - self.start
        along = offsets @ self.unit
        # Signed distance from the line; > 0 is where LineZone's "in" side is (its cross product < 0).
        across = offsets[:, 0] * self.unit[1] - offsets[:, 1] * self.unit[0]
        for i, key in enumerate(int(t) for t in ids):
            if key < 0:
                continue  # trackers give unconfirmed tracks a negative id, shared by several objects
            if not 0.0 <= along[i] <= self.length:
                self._see(key, None, now, far=False)  # beside the segment: no side, but still seen
                continue
            side = bool(across[i] > 0) if across[i] != 0 else None
            crossing = self._see(key, side, now, far=abs(across[i]) > margin[i])
            if crossing is True:
                self.in_count += 1
                crossed_in[i] = True
            elif crossing is False:
                self.out_count += 1
                crossed_out[i] = True
        self._forget(now)
        return crossed_in, crossed_out

    def _see(self, key: int, side: bool | None, now: float, far: bool) -> bool | None:
        """Record a sighting; the new side when it differs from the remembered one (a crossing), else None.

        After a counted crossing, changing sides again needs `far` (past the margin): the hysteresis.
        """
        seen = self._tracks.pop(key, None)
        if seen is None:
            self._tracks[key] = _Seen(side, now)
            return None
        self._tracks[key] = seen  # re-inserted last: the dict stays ordered by last sighting
        seen.time = max(seen.time, now)
        if side is None or side == seen.side or (seen.crossed and not far):
            return None
        crossed, seen.side = seen.side is not None, side
        seen.crossed = seen.crossed or crossed
        return side if crossed else None

    def _forget(self, now: float) -> None:
        """Drop ids unseen for longer than the window, and the oldest beyond max_tracks."""
        while self._tracks:
            key, seen = next(iter(self._tracks.items()))
            if now - seen.time <= self.memory_seconds and len(self._tracks) <= self.max_tracks:
                return
            del self._tracks[key]

    def __len__(self) -> int:
        return len(self._tracks)
