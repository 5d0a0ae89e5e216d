"""How builtin/people plans its scan while it is still measuring a camera (a first guess may only raise the upscale),
and how it scans a still, whose people it cannot measure."""

from __future__ import annotations

import pytest

from bot.backends.builtin.people_scale import (
    FIRST_GUESS,
    MIN_SAMPLES,
    UPSCALE_CAP,
    CameraState,
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
