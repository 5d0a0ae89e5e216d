"""When builtin/people probes a camera for a turn, how often, and what makes a verdict (real footage:
tests/bot/backends/test_turned_footage.py; here the detector is a stand-in that answers by turn)."""

from __future__ import annotations

import numpy as np
import pytest

from bot.backends.builtin.people_turn import (
    BACKOFF_AFTER,
    MAX_PROBE_SECONDS,
    MIN_HITS,
    PROBE_SECONDS,
    SUSPECT_SECONDS,
    TurnWatch,
)

FRAME = np.zeros((240, 320, 3), np.uint8)
LYING = [((100, 100, 160, 120), True)]  # a person-sized blob wider than tall
STANDING = [((100, 60, 120, 120), False)]


class Detector:
    """Finds no one, and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, image: np.ndarray, scale: float) -> int:
        self.calls += 1
        return 0


def feed(watch: TurnWatch, seconds: float, shaped, found: int, detector: Detector, fps: float = 5.0) -> list:
    """Frames for `seconds` of video; the verdict after each."""
    verdicts = []
    for _ in range(round(seconds * fps)):
        watch.after(FRAME, shaped, found, 1.0 / fps, detector)
        verdicts.append(watch.turned)
    return verdicts


def test_a_camera_whose_people_are_found_is_never_probed() -> None:
    detector = Detector()
    watch = TurnWatch()
    feed(watch, 120, LYING + STANDING, 2, detector)
    assert detector.calls == 0 and watch.turned is None


def test_probes_wait_for_motion_unseen_and_are_rate_limited_in_video_time_then_back_off() -> None:
    detector = Detector()  # finds no one, whatever the turn: nothing to decide
    watch = TurnWatch()
    feed(watch, SUSPECT_SECONDS - 0.5, STANDING, 0, detector)
    assert detector.calls == 0
    feed(watch, BACKOFF_AFTER * PROBE_SECONDS, STANDING, 0, detector, fps=10)
    first = watch.probes
    assert BACKOFF_AFTER - 1 <= first <= BACKOFF_AFTER + 1  # one probe every PROBE_SECONDS of video, at any fps
    feed(watch, 3600, STANDING, 0, detector, fps=2)
    assert watch.probes - first <= 3600 / MAX_PROBE_SECONDS + 10  # an hour of nothing decided: about once a minute
    assert detector.calls == 2 * watch.probes  # a standing blob: as it is and upside down, one crop each
    assert watch.turned is None


def by_call(finds_on: int, per_probe: int = 2):
    """A stand-in detector that finds someone only on the `finds_on`-th of each probe's calls (1-based): a probe tries
    one blob both ways its shape allows (lying: 90 then 270; standing: as it is, then upside down)."""
    calls = {"n": 0}

    def scan(image: np.ndarray, scale: float) -> int:
        calls["n"] += 1
        return int((calls["n"] - 1) % per_probe + 1 == finds_on)

    return scan


@pytest.mark.parametrize(("finds_on", "turn"), [(1, 90), (2, 270)])
def test_lying_people_found_when_turned_one_way_make_that_way_the_verdict(finds_on: int, turn: int) -> None:
    watch = TurnWatch()
    verdicts = feed(watch, 30, LYING, 0, by_call(finds_on))
    assert verdicts[-1] == turn
    first = verdicts.index(turn) / 5.0
    assert first <= SUSPECT_SECONDS + MIN_HITS * PROBE_SECONDS + 1, first


def test_a_turn_that_finds_no_more_than_its_rival_is_no_verdict() -> None:
    """Leaves and shadows: stray hits whichever way they are turned."""
    watch = TurnWatch()
    feed(watch, 600, LYING, 0, lambda image, scale: 1)
    assert watch.turned is None
    watch = TurnWatch()
    feed(watch, 600, STANDING, 0, lambda image, scale: 1)  # upside down finds people, but so does upright
    assert watch.turned is None


def test_an_upside_down_camera_is_judged_and_the_verdict_goes_when_people_are_seen_again() -> None:
    watch = TurnWatch()
    assert feed(watch, 20, STANDING, 0, by_call(2))[-1] == 180  # only upside down finds them
    assert feed(watch, 20, STANDING, 1, by_call(2))[-1] is None  # turned back by hand: people are found again
