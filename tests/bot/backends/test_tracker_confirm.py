"""The tracker: a track is shown once seen for a stretch of the stream (its real frame interval, not a frame count),
and a track that walked out of the frame gives its id to no one who comes in later."""

from __future__ import annotations

import numpy as np

from bot.backends.builtin.tracker import _Video, associate, confirmed

MIN_SEEN = 0.3


def _shown_per_frame(fps: float, sightings: int) -> list[bool]:
    """Whether one walker, seen in `sightings` frames in a row of a stream at fps, is shown in each of them."""
    video = _Video()
    shown = []
    for k in range(sightings):
        box = np.array([[100.0 + 5 * k, 100.0, 140.0 + 5 * k, 200.0]])
        ids = associate(video, box, np.array([0.9]), np.array([0]), k / fps, 0.25, 2.0, 0.01, 2.0)
        shown.append(bool(confirmed(video, ids, 1.0 / fps, MIN_SEEN)[0]))
    return shown


def test_at_10_fps_a_single_frame_false_alarm_is_never_shown_and_a_walker_from_the_third_frame():
    assert _shown_per_frame(10.0, 1) == [False]
    assert _shown_per_frame(10.0, 2) == [False, False]
    assert _shown_per_frame(10.0, 5) == [False, False, True, True, True]


def test_at_5_fps_from_the_second_frame_and_at_2_fps_at_once_where_one_frame_spans_half_a_second():
    assert _shown_per_frame(5.0, 3) == [False, True, True]
    assert _shown_per_frame(2.0, 2) == [True, True]


def test_the_stream_s_real_interval_counts_not_the_rate_it_declares():
    """A camera that says 25 fps but delivers 2 frames a second: after its first frame, each frame is half a second."""
    video = _Video()
    shown = []
    for k in range(3):
        ids = associate(video, np.array([[100.0, 100.0, 140.0, 200.0]]), np.array([0.9]), np.array([0]), k / 2.0,
                        0.25, 2.0, 0.01, 2.0)
        shown.append(bool(confirmed(video, ids, 1.0 / 25.0, MIN_SEEN)[0]))
    assert shown == [False, True, True]


def test_boxes_left_untracked_are_never_shown():
    video = _Video()
    ids = associate(video, np.array([[0.0, 0.0, 10.0, 30.0]]), np.array([0.1]), np.array([0]), 0.0, 0.25, 2.0,
                    0.01, 2.0)
    assert list(ids) == [-1] and not confirmed(video, ids, 0.5, MIN_SEEN).any()


def test_someone_entering_after_a_walker_left_the_frame_gets_a_new_id():
    """crossing.mp4 at 5 fps: a man leaves at the left edge; 2 s later another enters on the right, within the
    reach a 2 s gap allows. Taking the first one's id made him 'cross back' and count in (the clip: 0 in, 3 out)."""
    video = _Video()
    for k, x in enumerate((90, 60, 30)):  # leaving leftwards, 75 px/s
        associate(video, np.array([[x - 20.0, 100.0, x + 20.0, 205.0]]), np.array([0.9]), np.array([0]), k / 5.0,
                  0.25, 2.0, 0.01, 2.0, (240, 300))
    later = np.array([[199.0, 130.0, 239.0, 202.0]])
    assert list(associate(video, later, np.array([0.9]), np.array([0]), 2.4, 0.25, 2.0, 0.01, 2.0, (240, 300))) == [2]
    # Without the frame the prediction (far off the left edge) would still be within reach: the old id came back.
    video = _Video()
    for k, x in enumerate((90, 60, 30)):
        associate(video, np.array([[x - 20.0, 100.0, x + 20.0, 205.0]]), np.array([0.9]), np.array([0]), k / 5.0,
                  0.25, 2.0, 0.01, 2.0)
    assert list(associate(video, later, np.array([0.9]), np.array([0]), 2.4, 0.25, 2.0, 0.01, 2.0)) == [1]
