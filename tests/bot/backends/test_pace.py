"""The last minute's rate and the line saying a pipeline falls short of the rate asked (bot/backends/pace.py), on a
clock the test moves: a stall shows in the rate, the cause is read from the source's frame numbers."""

from __future__ import annotations

import pytest

from bot.backends.pace import SETTLE, SHORT, WINDOW, Pace


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def feed(pace: Pace, clock: Clock, seconds: float, delivered: float, grabbed: float | None = None,
         first_id: int = 0) -> int:
    """`delivered` results a second for `seconds`, the source numbering `grabbed` frames a second (None: no ids)."""
    n, frame_id = int(seconds * delivered), first_id
    for _ in range(n):
        clock.now += 1 / delivered
        frame_id += round((grabbed or delivered) / delivered) if grabbed else 1
        pace.tick(frame_id if grabbed is not None else None)
    return frame_id


@pytest.mark.parametrize("rate", [0.4, 1.3, 3.3, 7.5, 25.0])
def test_the_rate_is_the_last_minutes_not_the_lifetimes(rate: float) -> None:
    clock = Clock()
    pace = Pace(clock=clock)
    feed(pace, clock, 300, rate * 4)  # five fast minutes first
    feed(pace, clock, WINDOW + 5, rate)  # then a slow minute
    assert pace.fps(running=True) == pytest.approx(rate, rel=0.1)  # a lifetime average says about 3.4x more


def test_a_stall_shows_in_a_running_pipelines_rate_and_not_in_a_finished_ones() -> None:
    clock = Clock()
    pace = Pace(clock=clock)
    feed(pace, clock, 90, 5.0)
    clock.now += WINDOW / 2  # nothing for half a minute
    assert pace.fps(running=True) == pytest.approx(2.5, rel=0.1)
    clock.now += WINDOW
    assert pace.fps(running=True) == 0.0
    assert pace.fps(running=False) == pytest.approx(5.0, rel=0.05)  # what it ran at before it ended


def test_within_the_first_minute_the_rate_is_since_the_first_result() -> None:
    clock = Clock()
    pace = Pace(clock=clock)
    assert pace.fps(running=True) is None
    pace.tick(1)
    assert pace.fps(running=True) is None  # one result measures nothing
    feed(pace, clock, 20, 2.0)
    assert pace.fps(running=True) == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize(("target", "delivered"), [(10, 3.3), (5, 1.4), (120, 17.0), (2, 0.5)])
def test_a_file_falling_short_is_cpu_bound(target: float, delivered: float) -> None:
    clock = Clock()
    pace = Pace(target, live=False, clock=clock)
    feed(pace, clock, SETTLE + 5, delivered, grabbed=target)
    assert pace.short_of(running=True) == f"{delivered:.1f} of {target:g} fps: CPU-bound; lower fps or size"
    assert pace.short_of(running=False) is None  # a paused or finished one falls short of nothing


@pytest.mark.parametrize(("target", "camera", "delivered"), [(5, 1.5, 1.5), (10, 4.0, 3.9), (25, 12.0, 11.0)])
def test_a_camera_sending_fewer_frames_than_asked_is_named_as_the_cause(target: float, camera: float,
                                                                         delivered: float) -> None:
    clock = Clock()
    pace = Pace(target, live=True, clock=clock)
    feed(pace, clock, SETTLE + 20, delivered, grabbed=camera)
    said = pace.short_of(running=True)
    assert said is not None and said.startswith(f"{delivered:.1f} of {target:g} fps: the camera sends ")
    assert "CPU" not in said


def test_a_camera_sending_enough_while_fewer_come_through_is_cpu_bound() -> None:
    clock = Clock()
    pace = Pace(5, live=True, clock=clock)
    feed(pace, clock, SETTLE + 20, 1.3, grabbed=25)  # a 25 fps camera, most frames dropped waiting for the detector
    assert pace.short_of(running=True) == "1.3 of 5 fps: CPU-bound; lower fps or size"


@pytest.mark.parametrize("share", [SHORT + 0.02, 0.95, 1.0, 1.5])
def test_keeping_up_or_close_to_it_says_nothing(share: float) -> None:
    clock = Clock()
    pace = Pace(8, live=False, clock=clock)
    feed(pace, clock, WINDOW, 8 * share)
    assert pace.short_of(running=True) is None


def test_nothing_is_said_before_it_settled_or_without_a_rate_asked() -> None:
    clock = Clock()
    pace, free = Pace(10, live=False, clock=clock), Pace(None, live=False, clock=clock)
    for p in (pace, free):
        p.tick(1)
    clock.now += SETTLE / 2
    pace.tick(2)
    assert pace.short_of(running=True) is None  # 2 results in 5 s, but the first seconds say little
    clock.now += SETTLE
    assert pace.short_of(running=True) is not None and free.short_of(running=True) is None
