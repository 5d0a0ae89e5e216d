"""The tracker's `reach_used` (what bot/pipelines/limits.py reads to say "raise fps"): how much of its reach a
moving object's step takes. Box jitter off a standing person is the detector, not motion, and must not fill it (at
10 fps it did: vtest.avi at 1.5x was told "raise fps" while counting 35 of 37); an object that really moves too
fast for the rate must."""

from __future__ import annotations

import numpy as np

from bot.backends.builtin.tracker import _Video, associate
from bot.pipelines.limits import cannot_count

HEIGHT = 100.0


def _reach_used(fps: float, centres: list[tuple[float, float]], followed: bool = True) -> dict:
    """Feed one object's boxes (HEIGHT tall, at the given centres, one a frame at fps); the `tracking` output."""
    video = _Video()
    for k, (x, y) in enumerate(centres):
        box = np.array([[x - 20, y - HEIGHT / 2, x + 20, y + HEIGHT / 2]])
        ids = associate(video, box, np.array([0.9]), np.array([0]), k / fps, 0.25, 2.0, 0.01, 2.0)
        assert ids[0] == 1 or not followed, f"frame {k}: the object lost its track"
    return video.tracking(2.0)


def test_a_standing_person_s_jittering_box_at_10_fps_is_not_motion_and_says_nothing():
    rng = np.random.default_rng(3)
    centres, (x, y) = [], (300.0, 300.0)
    for _ in range(300):  # each frame the box jumps 0.35-0.45 heights, roughly back towards where the person stands
        angle = np.arctan2(300 - y, 300 - x) + rng.uniform(-np.pi / 2, np.pi / 2)
        size = rng.uniform(0.35, 0.45) * HEIGHT
        x, y = x + size * np.cos(angle), y + size * np.sin(angle)
        centres.append((x, y))
    tracking = _reach_used(10.0, centres, followed=False)
    assert tracking["reach_used"] is None or tracking["reach_used"] < 0.8, tracking
    assert cannot_count({"tracking": tracking}) is None


def test_an_object_faster_than_the_rate_follows_well_fills_the_reach_and_says_raise_fps():
    speed = 2.3 * HEIGHT  # px a second: beyond max_speed (2 heights/s), followed only by its predicted position
    centres = [(50 + speed * k / 2.0, 300.0) for k in range(20)]
    tracking = _reach_used(2.0, centres)
    assert tracking["reach_used"] is not None and tracking["reach_used"] >= 0.8, tracking
    assert "raise fps" in (cannot_count({"tracking": tracking}) or "")


def test_a_walker_at_2_fps_uses_a_part_of_the_reach():
    centres = [(50 + 0.9 * HEIGHT * k / 2.0, 300.0) for k in range(20)]  # ~1 height a second: a walker
    tracking = _reach_used(2.0, centres)
    assert tracking["reach_used"] is not None and 0.2 < tracking["reach_used"] < 0.5, tracking
