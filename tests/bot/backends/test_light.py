"""builtin/people's light measurement (bot/backends/builtin/light.py): a dark or noisy picture is told from a lit
one on real footage made dark / noisy / IR by bench/_light.py (the same transforms the envelope bench's light rows
use), switches with hysteresis, and the crops the detector scans are lifted only when the picture needs it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench._light import DAYLIGHT, Light
from bot.backends.builtin.light import LightState, account, conditions, measure, prepare

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"


def frames(n: int = 12) -> list[np.ndarray]:
    import cv2

    cap = cv2.VideoCapture(str(DATA / "substream_5fps.mp4"))
    out = []
    while len(out) < n and (got := cap.read())[0]:
        out.append(got[1])
    cap.release()
    assert len(out) == n
    return out


def measured(light: Light, every: float = 1.0) -> LightState:
    state = LightState()
    for k, frame in enumerate(frames()):
        measure(state, light.apply(frame, k), k * every)
    return state


# Points of the range the envelope bench does not run: a brighter dusk, a faint noise, an IR picture with noise.
@pytest.mark.parametrize(("light", "dark", "noisy"), [
    (DAYLIGHT, False, False),
    (Light("dusk", dark=0.3), True, False),  # ~1/8 of the light: a mean grey level ~50
    (Light("late night", dark=1.5), True, False),
    (Light("dim, faint noise", dark=1.2, noise=0.15), True, False),
    (Light("night, cheap sensor", dark=1.2, noise=0.8), True, True),
    (Light("ir, noise", ir=1.5, noise=0.9), False, True),
])
def test_dark_and_noisy_pictures_are_told_from_lit_and_clean_ones(light, dark, noisy):
    state = measured(light)
    assert (state.dark(), state.noisy()) == (dark, noisy), (state.luma, state.noise)
    said = conditions(state)["poor_light"]
    assert (said is None) == (not dark and not noisy)
    if said:
        assert ("dark" in said) == dark and ("noisy" in said) == noisy


def test_an_overcast_day_is_not_dark():
    state = LightState()
    for k, frame in enumerate(frames()):
        measure(state, (frame * 0.6).astype(np.uint8), float(k))  # 60 % of the light, no gain: still a lit street
    assert not state.poor() and conditions(state)["poor_light"] is None, state.luma


def test_a_picture_near_the_threshold_does_not_flicker_between_dark_and_lit():
    state = LightState()
    base = frames(1)[0].astype(np.float32)
    mean = float(base.mean())
    flips = []
    for k in range(40):  # the brightness wobbles ±8 % around the threshold (clouds, a passing car's lights)
        target = 60.0 * (1.0 + 0.08 * (1 if k % 2 else -1))
        frame = np.clip(base * target / mean, 0, 255).astype(np.uint8)
        measure(state, frame, k * 1.0)
        flips.append(state.dark())
    assert sum(a != b for a, b in zip(flips, flips[1:], strict=False)) <= 1


def test_measurements_are_spaced_in_video_time_and_a_still_is_measured_on_itself():
    state = LightState()
    frame = frames(1)[0]
    measure(state, frame, 10.0)
    before = state.measured_at
    measure(state, Light("n", dark=2.0).apply(frame, 1), 10.1)  # 0.1 s of video later: not measured again
    assert state.measured_at == before and not state.dark()
    still = LightState()
    measure(still, Light("n", dark=2.0).apply(frame, 1), None)
    assert still.dark() and still.noise is None  # one picture: its brightness, no noise to tell


def test_the_crops_are_scanned_as_they_are_in_good_light_and_lifted_in_a_poor_one():
    frame = frames(1)[0]
    lit = measured(DAYLIGHT)
    assert prepare(lit, frame, 2.0) is frame
    night = Light("night", dark=1.5, noise=0.8)
    poor = measured(night)
    dark = night.apply(frame, 0)
    lifted = prepare(poor, dark, 2.0)
    assert lifted.ndim == 2 and lifted.shape == dark.shape[:2]
    assert float(lifted.std()) > 1.5 * float(dark.std())  # the few dark levels spread out


def test_time_with_people_shaped_motion_mostly_unseen_counts_only_in_a_poor_picture():
    poor = measured(Light("n", dark=1.5))
    walkers = [(10, 10, 30, 70), (100, 20, 120, 80), (200, 30, 222, 95)]
    nobody = np.zeros((0, 4), np.float32)
    for _ in range(60):  # a minute of three walkers, none found
        account(poor, walkers, nobody, dt=1.0)
    assert poor.seen_share < 0.05 and conditions(poor)["unseen_seconds"] > 30
    account(poor, [], nobody, dt=50.0)  # nothing moving: no one to find, no time counted
    before = poor.unseen
    assert before < 60
    one = np.array([[5, 5, 35, 80]], np.float32)  # one in three found on each frame: counting copes with that
    for _ in range(40):
        account(poor, walkers, one, dt=1.0)
    assert poor.seen_share > 0.2 and poor.unseen == 0.0
    lit = measured(DAYLIGHT)
    for _ in range(300):
        account(lit, walkers, nobody, dt=1.0)
    assert lit.unseen == 0.0  # a lit camera that finds no one: the generic line's business (limits._blind)
