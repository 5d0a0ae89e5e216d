"""How builtin/people plans its scan while it is still measuring a camera: a first guess may only raise the upscale."""

from __future__ import annotations

from bot.backends.builtin.people_scale import FIRST_GUESS, MIN_SAMPLES, UPSCALE_CAP, CameraState, plan

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
