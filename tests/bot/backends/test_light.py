"""builtin/people's light measurement (bot/backends/builtin/light.py): a dark or noisy picture is told from a lit
one on real footage made dark / noisy / IR by bench/_light.py (the same transforms the envelope bench's light rows
use), switches with hysteresis, and the crops the detector scans are lifted only when the picture needs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def test_a_poor_picture_where_no_one_at_all_is_found_rests_until_someone_is():
    """An empty garden at night: no person-shaped motion to be unseen, yet no one found for REST_AFTER seconds of a
    poor picture is enough to rest; the first find wakes it, and a lit picture never rests."""
    from bot.backends.builtin.light import REST_AFTER

    garden = measured(Light("n", dark=1.5, noise=1.0))
    nobody, leaves = np.zeros((0, 4), np.float32), [(40, 40, 90, 70)]  # a blob wider than tall: not a walker
    for _ in range(int(REST_AFTER) - 1):
        account(garden, [], nobody, dt=1.0)
    assert not garden.resting(found_share=0.0) and garden.unseen == 0.0
    account(garden, leaves, nobody, dt=1.0)
    assert garden.resting(found_share=0.0) and garden.unseen == 0.0  # resting, yet nothing unseen: no "too poor" line
    account(garden, [], np.array([[5, 5, 35, 80]], np.float32), dt=1.0)  # someone walks in and is found
    assert not garden.resting(found_share=0.0)
    lit = measured(DAYLIGHT)
    for _ in range(3 * int(REST_AFTER)):
        account(lit, [], nobody, dt=1.0)
    assert not lit.resting(found_share=0.0)  # a lit quiet camera is the motion gate's business


def test_a_poor_picture_whose_noise_blobs_stay_unseen_rests_only_while_it_finds_someone_in_a_minority_of_moments():
    """Unseen time alone is not blindness: a noisy 320x240 night street found someone in 9 frames of 10 while most of
    its person-shaped noise blobs had no one on them (field test); the blind sub-stream found someone in a quarter."""
    from bot.backends.builtin.light import REST_AFTER

    street = measured(Light("n", dark=1.2, noise=0.7))
    street.unseen, street.seen_share = REST_AFTER, 0.15
    assert not street.resting(found_share=0.9)  # found most moments: it keeps looking at every frame
    assert street.resting(found_share=0.3)  # a find now and then among unseen people: blind, so it rests


def look(block: Any, frame: np.ndarray, k: int, t: float, from_file: bool = True, **settings: Any) -> dict:
    """builtin/people's `camera` output on `frame`, frame k of the video "cam", `t` seconds into it."""
    from datetime import datetime, timedelta

    from inference.core.workflows.execution_engine.entities.base import (
        ImageParentMetadata,
        VideoMetadata,
        WorkflowImageData,
    )

    meta = VideoMetadata(video_identifier="cam", frame_number=k, fps=5.0, comes_from_video_file=from_file,
                         frame_timestamp=datetime(2026, 1, 1) + timedelta(seconds=t))
    image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="cam"), video_metadata=meta,
                              numpy_image=frame)
    return block.run(images=image, confidence=0.5, min_height=None, max_side=1280, scale_step=1.1, iou_threshold=0.45,
                     **settings)["camera"]


def test_a_camera_too_dark_to_see_anyone_looks_once_a_second_yet_keeps_time_and_wakes_when_the_light_is_back(
        monkeypatch: pytest.MonkeyPatch):
    """builtin/people on the street made too dark and noisy to find anyone (bench/_light.py, as the light footage
    test's clip), its light already blind for REST_AFTER: it looks once a second of video, not on each of the 5 a
    second, and counts its unseen time by the clock; the street lit again, it looks at every moving frame once the
    light is measured good."""
    from bot.backends.builtin import people
    from bot.backends.builtin.light import REST_AFTER, REST_SECONDS
    from bot.backends.builtin.motion_gate import MotionGate
    from bot.backends.builtin.people import HogPeopleDetectorBlockV1
    from bot.backends.builtin.people_scale import CameraState

    accounted: list[float] = []  # the video time each look accounts the light's share and unseen time for

    def account_light(state: LightState, shaped: list, found: np.ndarray, dt: float,
                      sample: float | None = None) -> None:
        accounted.append(dt)
        account(state, shaped, found, dt, sample)

    monkeypatch.setattr(people, "account_light", account_light)

    fps, night = 5.0, Light("black night, poor sensor", dark=2.3, noise=1.8)
    block = HogPeopleDetectorBlockV1()
    light = block._lights.get("cam", LightState)
    light.unseen, light.seen_share = REST_AFTER, 0.0  # as after a minute of people-shaped motion mostly unseen,
    block._cameras.get("cam", CameraState).found_share = 0.0  # with no one found on it (not even stray hits)

    street = frames(120)
    skipped = MotionGate.skipped
    for k, frame in enumerate(street[:50]):  # 10 s of the dark street
        camera = look(block, night.apply(frame, k), k, k / fps)
    looks = 50 - (MotionGate.skipped - skipped)
    assert 10 / REST_SECONDS - 1 <= looks <= 10 / REST_SECONDS + 1, looks
    assert camera["resting"] and camera["poor_light"] == "too dark and noisy", camera
    assert len(accounted) == looks and sum(accounted) == pytest.approx(49 / fps - block._cameras["cam"].held)
    assert camera["unseen_seconds"] > REST_AFTER, camera  # the rested frames' time counted (and the verdict as soon)
    for k, frame in enumerate(street[50:], start=50):  # the light comes back (14 s: its noise is measured over 5 s)
        camera = look(block, frame, k, k / fps)
        if k == 109:
            skipped = MotionGate.skipped
    assert not camera["resting"] and camera["unseen_seconds"] == 0.0, camera
    assert 10 - (MotionGate.skipped - skipped) > 2 * 2 / REST_SECONDS, "awake: every moving frame is looked at"


def test_a_gap_in_the_video_counts_as_a_few_seconds_unwatched_not_as_time_unseen(monkeypatch: pytest.MonkeyPatch):
    """A camera that reconnects after 90 s (its clock jumps): the gap was not watched, so neither the light's unseen
    and idle time nor the camera's blind time takes more than GAP_SECONDS of it (field test: a countable night camera
    was made 'blind' by one jump and rested at once)."""
    from bot.backends.builtin import people
    from bot.backends.builtin.people import HogPeopleDetectorBlockV1
    from bot.backends.builtin.people_scale import GAP_SECONDS

    spent: list[tuple[float, float]] = []  # (dt the light accounted, dt the camera's blind time accounted)
    light_account, camera_account = people.account_light, people.account
    monkeypatch.setattr(people, "account_light", lambda s, shaped, found, dt, *rest: (
        spent.append((dt, -1.0)), light_account(s, shaped, found, dt, *rest)))
    monkeypatch.setattr(people, "account", lambda s, found, dt: (spent.append((-1.0, dt)), camera_account(s, found, dt)))
    block, night = HogPeopleDetectorBlockV1(), Light("night", dark=1.0, noise=0.5)
    for k, (frame, t) in enumerate(zip(frames(4), (0.0, 0.2, 0.4, 90.4), strict=True)):
        look(block, night.apply(frame, k), k, t, from_file=False, motion_gate=False)
    after_jump = [max(a, b) for a, b in spent[-2:]]
    assert after_jump == [GAP_SECONDS, GAP_SECONDS], spent
