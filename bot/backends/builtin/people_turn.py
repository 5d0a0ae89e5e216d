"""Whether a camera is mounted turned, from what moves through it: what builtin/people says when it cannot see.

HOG finds upright people only. On a camera turned a quarter, people walk through lying down: their moving blobs are
wider than tall, and HOG finds none of them; upside down (a ceiling camera without its flip setting) the blobs stand
but HOG finds a stray one now and then. Both looked like an empty street: 0 of 11 crossings counted and nothing said.

So while person-sized things move and the detector finds (almost) no one, the detector is tried, now and then, on
those very blobs turned: each lying blob a quarter turn either way, each standing blob upside down and as it is (the
control: the crop is framed and scaled to the blob, so a small person the full pass missed is found upright there).
A turn that finds people in most of the probes that tried it, and clearly more often than the other way, is the
verdict: `turned` (degrees clockwise that would make the frames upright) in the block's `camera` output, which
bot/pipelines/limits.py turns into one line with the setting to use. Leaves, cars and shadows give stray hits at
every turn alike, so they make no verdict.

Cost: an upright camera whose people are found never probes (one comparison per frame). A camera where people move
unseen probes at most every PROBE_SECONDS of video, backing off to MAX_PROBE_SECONDS while nothing is decided, on at
most CROPS crops framed to a blob, each scanned at the scale that fits the blob to HOG's window (a few ms each).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import cv2
import numpy as np

Box = tuple[int, int, int, int]
WINDOW_SECONDS = 10.0  # the recent person-sized motion over which sight is judged
SUSPECT_SECONDS = 2.0  # of such motion (in that window) before anything is judged
UNSEEN_SHARE = 0.4  # under this share of it with someone found, the detector does not see these people (an
# upside-down street gave stray hits in a third of its moments)
SEEN_SHARE = 0.6  # over it, it does: a verdict is dropped (the camera was turned back)
PROBE_SECONDS = 2.0  # video seconds between probes while people go unseen
MAX_PROBE_SECONDS = 60.0  # the interval grows to this while probes decide nothing
BACKOFF_AFTER = 8  # probes at the first interval before it grows
CROPS = 3  # the largest person-sized blobs probed each time
KEPT = 12  # probes remembered per turn
MIN_HITS = 3  # probes in which a turn found someone, at least, for a verdict
HIT_SHARE = 0.5  # and at least this share of the probes that tried it
RIVAL = {90: 270, 270: 90, 180: 0}  # what a turn must beat: the other quarter turn; upside down, the frame as it is
_TURNS = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
_HOG_PERSON_PX = 96.0  # the person's height in HOG's window (people.py)
MIN_SCALE, MAX_SCALE = 0.25, 4.0
Scan = Callable[[np.ndarray, float], int]  # (image, scale) -> people found in it


@dataclass
class TurnWatch:
    """One video's recent sight (motion moments: seconds, someone found) and the probes' outcomes per turn."""

    recent: deque[tuple[float, bool]] = field(default_factory=deque)
    since_probe: float = 0.0
    probes: int = 0
    outcomes: dict[int, deque[bool]] = field(default_factory=lambda: {t: deque(maxlen=KEPT) for t in (0, 90, 180, 270)})
    turned: int | None = None  # degrees clockwise that make the frames upright, once decided

    def after(self, frame: np.ndarray, shaped: list[tuple[Box, bool]], found: int, dt: float, scan: Scan) -> None:
        """After the detector ran on a frame: its person-sized blobs (lying or not) and how many people it found."""
        self.since_probe += dt
        if not shaped:
            return  # no one-sized thing moves: nothing to judge
        self.recent.append((dt, found > 0))
        while len(self.recent) > 1 and sum(d for d, _ in self.recent) - self.recent[0][0] >= WINDOW_SECONDS:
            self.recent.popleft()
        motion = sum(d for d, _ in self.recent)
        seen = sum(d for d, hit in self.recent if hit)
        if motion < SUSPECT_SECONDS:
            return
        if seen >= SEEN_SHARE * motion:
            if self.turned is not None:  # people are seen as they come: whatever was turned is upright now
                self.reset()
            return
        if seen >= UNSEEN_SHARE * motion or self.turned is not None or self.since_probe < self.interval():
            return
        self.since_probe = 0.0
        self.probes += 1
        self._probe(frame, shaped, scan)
        self.turned = self._verdict()

    def reset(self) -> None:
        self.probes, self.turned = 0, None
        for outcomes in self.outcomes.values():
            outcomes.clear()

    def interval(self) -> float:
        return min(PROBE_SECONDS * 1.5 ** max(0, self.probes - BACKOFF_AFTER), MAX_PROBE_SECONDS)

    def _probe(self, frame: np.ndarray, shaped: list[tuple[Box, bool]], scan: Scan) -> None:
        """The detector on the largest blobs, each turned both ways its shape allows; one outcome per turn tried."""
        hits: dict[int, bool] = {}
        largest = sorted(shaped, key=lambda s: -(s[0][2] - s[0][0]) * (s[0][3] - s[0][1]))[:CROPS]
        for box, lying in largest:
            crop, length = _framed(frame, box, lying)
            scale = float(np.clip(_HOG_PERSON_PX / (0.8 * length), MIN_SCALE, MAX_SCALE))
            for turn in ((90, 270) if lying else (0, 180)):
                image = crop if turn == 0 else cv2.rotate(crop, _TURNS[turn])
                hits[turn] = hits.get(turn, False) or scan(image, scale) > 0
        for turn, hit in hits.items():
            self.outcomes[turn].append(hit)

    def _verdict(self) -> int | None:
        for turn, rival in RIVAL.items():
            tried, rivals = self.outcomes[turn], self.outcomes[rival]
            won = sum(tried)
            if won >= MIN_HITS and won >= HIT_SHARE * len(tried) and won >= 2 * sum(rivals) + 1:
                return turn
        return None


def _framed(frame: np.ndarray, box: Box, lying: bool) -> tuple[np.ndarray, float]:
    """The part of the frame a person in `box` stands in (room above and below, beside them: as people_scale.plan
    pads a region), and the person's length in px along their body."""
    x1, y1, x2, y2 = box
    length = float(max(x2 - x1, 1) if lying else max(y2 - y1, 1))
    along, across = 0.35 * length, 0.5 * length
    pad_x, pad_y = (along, across) if lying else (across, along)
    height, width = frame.shape[:2]
    cx1, cy1 = max(0, int(x1 - pad_x)), max(0, int(y1 - pad_y))
    cx2, cy2 = min(width, int(x2 + pad_x) + 1), min(height, int(y2 + pad_y) + 1)
    return frame[cy1:cy2, cx1:cx2], length
