"""How builtin/people plans its scan while it is still measuring a camera (a first guess may only raise the upscale),
and how it scans a still, whose people it cannot measure."""

from __future__ import annotations

import numpy as np
import pytest

from bot.backends.builtin.people_scale import (
    FIRST_GUESS,
    KNOWN_SHARE,
    MIN_SAMPLES,
    UPSCALE_CAP,
    CameraState,
    fitted,
    plan,
    still_scale,
)

WINDOW = (64, 128)
PERSON_PX = 96.0  # the detector's person height inside its window
DEFAULT = 1.5  # what min_height=64 gives
SUBSTREAM = (288, 384, 3)


def _state(*heights: float) -> CameraState:
    state = CameraState()
    state.heights.extend(heights)
    return state


def test_before_a_first_guess_the_whole_frame_is_scanned_at_the_default_upscale():
    scale, crops = plan(_state(*[30.0] * (FIRST_GUESS - 1)), SUBSTREAM, [], DEFAULT, WINDOW, PERSON_PX)
    assert scale == DEFAULT and crops == [(0, 0, 384, 288)]


def test_a_few_small_moving_people_raise_the_upscale_at_once_on_the_whole_frame():
    small = _state(*[34.0] * FIRST_GUESS)  # a sub-stream: people ~34 px, under what the default upscale finds
    assert small.person_height() is None  # not measured yet: MIN_SAMPLES blobs are needed for that
    scale, crops = plan(small, SUBSTREAM, [(10, 10, 30, 60)], DEFAULT, WINDOW, PERSON_PX)
    assert DEFAULT < scale <= UPSCALE_CAP and crops == [(0, 0, 384, 288)]  # no crops before the size is settled


def test_a_first_guess_of_big_people_never_lowers_the_default_upscale():
    scale, _ = plan(_state(*[200.0] * (MIN_SAMPLES - 1)), (1080, 1920, 3), [], DEFAULT, WINDOW, PERSON_PX)
    assert scale == DEFAULT


BUDGET = 1280.0  # the block's default max_side
# Stills from 160 px to 40 MP, (height, width): sizes of sub-streams, phones, DSLRs; most are named by no issue.
STILLS = [(120, 160), (144, 192), (180, 240), (288, 384), (480, 640), (576, 768), (720, 1280), (1080, 1920),
          (3000, 4000), (4000, 6000), (5472, 7296)]


@pytest.mark.parametrize("shape", STILLS)
def test_a_still_is_scanned_as_finely_as_the_budget_allows_and_never_past_it(shape):
    scale = still_scale(shape, None, BUDGET, PERSON_PX)
    assert max(shape) * scale <= BUDGET + 1e-6  # the scanned image: at most max_side, whatever the still's size
    assert scale <= UPSCALE_CAP
    assert max(shape) * scale == pytest.approx(BUDGET) or scale == UPSCALE_CAP  # nothing of the budget left unused


def test_small_stills_reach_the_people_a_substream_shows_and_larger_ones_never_reach_smaller():
    smallest = [PERSON_PX / still_scale(shape, None, BUDGET, PERSON_PX) for shape in STILLS]
    assert smallest == sorted(smallest)  # a bigger picture never looks for smaller people: its cost stays bounded
    for shape, px in zip(STILLS, smallest, strict=True):
        if max(shape) <= 400:  # sub-stream sized: people are 10-35 % of the height (30-100 px at 288 rows)
            assert px <= 0.2 * shape[0], (shape, px)


def test_min_height_says_the_smallest_person_instead():
    assert still_scale(SUBSTREAM, 64, BUDGET, PERSON_PX) == DEFAULT
    assert still_scale((3000, 4000, 3), 200, BUDGET, PERSON_PX) == PERSON_PX / 200
    assert still_scale(SUBSTREAM, 1, BUDGET, PERSON_PX) == PERSON_PX / 8  # floored; the scan caps it at max_side


FIVE_FPS = 0.2  # seconds between frames


def _measured(typical: float) -> CameraState:
    state = _state(*[typical] * MIN_SAMPLES)
    state.since_full = 0.0  # the whole-frame rescan is not due
    return state


def _area(crop: tuple[int, ...]) -> int:
    return (crop[2] - crop[0]) * (crop[3] - crop[1])


def test_a_whole_person_is_scanned_with_room_for_the_window_and_a_fragment_with_room_for_a_person():
    typical = 100.0
    state = _measured(typical)
    person, fragment = (100, 100, 140, 200), (400, 100, 470, 160)  # a standing blob; a 70x60 one (an arm, a bag)
    state.shaped = [(person, False)]
    scale, crops = plan(state, (480, 640, 3), [person, fragment], DEFAULT, WINDOW, PERSON_PX, FIVE_FPS)
    assert len(crops) == 2
    around_person = next(c for c in crops if c[0] <= person[0] and c[2] >= person[2])
    around_fragment = next(c for c in crops if c is not around_person)
    # HOG's window holds the person 96 of 128 px tall and 64 px wide: it must fit round the blob
    tall = person[3] - person[1]
    assert around_person[3] - around_person[1] >= tall * WINDOW[1] / PERSON_PX
    assert around_person[2] - around_person[0] >= tall * WINDOW[0] / PERSON_PX
    assert around_person[1] <= person[1] and around_person[3] >= person[3]
    # a fragment may be the top of someone: a whole typical person fits beside and below it
    assert around_fragment[3] - fragment[1] >= 0.6 * typical and around_fragment[2] - around_fragment[0] >= typical
    assert _area(around_person) < _area(around_fragment)


def test_a_person_found_last_frame_is_scanned_tightly_and_every_walker_of_a_crowd_is_covered():
    typical = 100.0
    state = _measured(typical)
    state.last_boxes = np.array([[300, 200, 340, 300]], np.float32)
    _, crops = plan(state, (480, 640, 3), [], DEFAULT, WINDOW, PERSON_PX, FIVE_FPS)
    assert len(crops) == 1 and _area(crops[0]) <= 1.7 * 100 * 100  # the box and its margins, not a person beside it
    crowd = [(x, 150 + x // 8, x + 40, 250 + x // 8) for x in range(0, 600, 45)]  # walkers in a row, overlapping crops
    state.shaped = [(b, False) for b in crowd]
    _, crops = plan(state, (480, 640, 3), crowd, DEFAULT, WINDOW, PERSON_PX, FIVE_FPS)
    for b in crowd:  # merged or not, each walker lies inside one crop with its window margins
        assert any(c[0] <= b[0] and c[1] <= b[1] - 15 and c[2] >= b[2] and c[3] >= b[3] + 15 for c in crops), b


@pytest.mark.parametrize(("second", "dt", "poor", "joined"), [
    ((160, 215, 200, 315), FIVE_FPS, False, False), ((150, 100, 190, 200), FIVE_FPS, False, True),
    ((160, 215, 200, 315), 0.5, False, True), ((160, 215, 200, 315), FIVE_FPS, True, True),
], ids=["apart on a diagonal", "side by side", "apart on a diagonal at 2 fps", "apart on a diagonal in poor light"])
def test_overlapping_crops_are_joined_only_when_one_scan_reads_fewer_pixels(second, dt, poor, joined):
    """Two walkers whose crops touch at a corner keep two crops (their bounding box is mostly background no one moved
    in); two side by side, whose crops mostly overlap, are scanned once; under 4 fps or in a poor picture every
    overlap is joined, as before. Either way each walker lies wholly in a crop with its window margins."""
    state = _measured(100.0)
    first = (100, 100, 140, 200)
    state.last_boxes = np.array([first, second], np.float32)
    _, crops = plan(state, (480, 640, 3), [], DEFAULT, WINDOW, PERSON_PX, dt, poor)
    assert len(crops) == (1 if joined else 2)
    bounding = (min(c[0] for c in crops), min(c[1] for c in crops), max(c[2] for c in crops), max(c[3] for c in crops))
    assert sum(_area(c) for c in crops) <= _area(bounding)
    for b in (first, second):
        assert any(c[0] <= b[0] - 15 and c[1] <= b[1] - 15 and c[2] >= b[2] + 15 and c[3] >= b[3] + 15 for c in crops), b


@pytest.mark.parametrize(("dt", "poor"), [(FIVE_FPS, True), (0.5, False), (1 / 3, False), (0.0, False)])
def test_in_a_dark_or_noisy_picture_or_under_4_fps_every_region_keeps_room_for_a_whole_person(dt, poor):
    """Poor light: the brightened copy's blobs are ragged. 2-3 fps: a walker moves further than the tight pad between
    frames. The first frame (dt 0): no interval known yet."""
    person = (100, 100, 140, 200)

    def areas(dt: float, poor: bool) -> list[int]:
        state = _measured(100.0)
        state.shaped = [(person, False)]
        state.last_boxes = np.array([[300, 200, 340, 300]], np.float32)
        _, crops = plan(state, (480, 640, 3), [person], DEFAULT, WINDOW, PERSON_PX, dt, poor)
        return sorted(_area(c) for c in crops)

    tight, loose = areas(FIVE_FPS, False), areas(dt, poor)
    assert len(tight) == len(loose) == 2
    assert all(t < lo for t, lo in zip(tight, loose, strict=True))


BOX_PX = 110.0  # a HOG box's height at the scale it was found (its window, trimmed)


def _fit(last: list[tuple[int, int, int, int]], moving: list[tuple[int, int, int, int]], poor: bool = False,
         typical: float = 100.0, dt: float = FIVE_FPS,
         shape: tuple[int, int, int] = (480, 640, 3)) -> tuple[float, list[tuple[int, int, int, int]], list[float]]:
    state = _measured(typical)
    state.shaped = [(r, False) for r in moving]
    state.last_boxes = np.array(last, np.float32).reshape(-1, 4)
    scale, crops = plan(state, shape, moving, DEFAULT, WINDOW, PERSON_PX, FIVE_FPS, poor)
    return scale, crops, fitted(state, crops, moving, scale, WINDOW, BOX_PX, dt, poor)


def test_a_crop_of_people_found_last_frame_is_scanned_from_their_own_size_not_the_smallest_anyone_is():
    """A near walker 150 px tall (typical 100): the camera's upscale finds people from 60 px, pyramid levels no one in
    that crop needs. Fitted to them, HOG still finds boxes down to KNOWN_SHARE of theirs and the crop holds its
    window."""
    near = (300, 250, 360, 400)
    walked = (305, 255, 365, 405)  # the same walker's motion, a step on
    scale, crops, scales = _fit([near], [walked])
    assert len(crops) == 1
    (x1, y1, x2, y2), fit = crops[0], scales[0]
    assert fit == pytest.approx(BOX_PX / (KNOWN_SHARE * 150))  # the smallest box HOG returns there: 0.75 of theirs
    assert (y2 - y1) * fit >= WINDOW[1] and (x2 - x1) * fit >= WINDOW[0]
    assert (fit / scale) ** 2 < 0.5  # and the cost: pixels go with the upscale's square


def test_a_crop_cut_by_the_frames_edge_is_upscaled_at_least_until_the_window_fits_in_it():
    """A walker half out of the bottom of the frame: their crop is shorter than their box, and fitted to them alone
    it would be too small for HOG's window (which would find no one in it)."""
    low = (300, 400, 360, 550)  # 150 px tall, half below a 480 px frame
    scale, crops, scales = _fit([low], [])
    (x1, y1, x2, y2), fit = crops[0], scales[0]
    assert BOX_PX / (KNOWN_SHARE * 150) < fit < scale
    assert (y2 - y1) * fit >= WINDOW[1] and (x2 - x1) * fit >= WINDOW[0]


@pytest.mark.parametrize("case", ["someone new", "two people in one blob", "a smaller person beside them",
                                  "a smaller person's blob merged with theirs", "two found walking together",
                                  "two found a step of each one's height apart", "poor light", "under 4 fps", "first frame", "nobody found"])
def test_motion_no_found_person_explains_keeps_the_cameras_upscale(case):
    """Someone new (their blob outside last frame's boxes), a blob wider than the box it overlaps (two people), or
    shorter than it (a smaller person beside the one found, or a part of them) may be anyone's size: the crop keeps
    the camera's upscale. So does a poor picture, a frame more than 1 / TIGHT_FPS s after the last (or the first: no
    interval), a crop with no one found, and two found within a step of each other (HOG loses one to the other)."""
    near = (300, 250, 360, 400)
    moving = {"someone new": [(305, 255, 365, 405), (370, 300, 400, 360)],
              "two people in one blob": [(300, 250, 450, 400)],
              "a smaller person beside them": [(305, 255, 365, 405), (340, 300, 370, 370)],
              "a smaller person's blob merged with theirs": [(305, 255, 395, 405)],
              "two found walking together": [(305, 255, 365, 405)],
              "two found a step of each one's height apart": [(305, 255, 365, 405)],
              "poor light": [(305, 255, 365, 405)],
              "under 4 fps": [(305, 255, 365, 405)],
              "first frame": [(305, 255, 365, 405)],
              "nobody found": [(305, 255, 365, 405)]}[case]
    last = {"nobody found": [], "two found walking together": [near, (370, 260, 410, 400)],
            # 35 px apart: more than a step of the taller one (22 px), less than a step of each (22 + 21): carrying
            # leaves them to HOG, and so does fitting (one rule, people_scale.apart)
            "two found a step of each one's height apart": [near, (395, 260, 435, 400)]}.get(case, [near])
    dt = {"under 4 fps": 0.5, "first frame": 0.0}.get(case, FIVE_FPS)
    scale, crops, scales = _fit(last, moving, poor=case == "poor light", dt=dt)
    assert crops and scales == [scale] * len(crops)


def test_a_crop_of_several_found_people_is_fitted_to_the_smallest_and_never_finer_than_the_camera():
    big, small = (100, 150, 160, 330), (208, 200, 248, 320)  # 180 and 120 px tall, 48 px apart (over a step each)
    state = _measured(100.0)
    state.last_boxes = np.array([big, small], np.float32)
    scale, _ = plan(state, (480, 640, 3), [], DEFAULT, WINDOW, PERSON_PX, FIVE_FPS)
    both = (60, 120, 280, 360)  # one crop round both (a crowd's crops joined)
    [fit] = fitted(state, [both], [], scale, WINDOW, BOX_PX, FIVE_FPS)
    assert fit == pytest.approx(BOX_PX / (KNOWN_SHARE * 120)) and fit < scale
    tiny = (400, 300, 420, 340)  # 40 px tall: would need more than the camera's upscale; never more than it
    scale, crops, scales = _fit([tiny], [])
    assert scales == [scale]
