"""The gap-tolerant line counter's side memory (bot/backends/builtin/crossings.py) on synthetic tracks at 10 fps."""

from __future__ import annotations

import numpy as np
import pytest

from bot.backends.builtin.crossings import LineCrossings

LINE = ((100.0, 0.0), (100.0, 200.0))  # vertical, top to bottom: walking left → right is "in", as LineZone counts
FPS = 10.0


def walk(xs: list[float | None]) -> list[list[tuple[int, float]]]:
    """One person (id 1) at these x positions frame by frame; None: not seen that frame."""
    return [[] if x is None else [(1, x)] for x in xs]


def feed(counter: LineCrossings, frames: list[list[tuple[int, float]]], margin: float = 0.0) -> None:
    for n, seen in enumerate(frames):
        ids = [key for key, _ in seen]
        anchors = [(x, 150.0) for _, x in seen]
        counter.update(np.array(anchors).reshape(-1, 2), np.array(ids, dtype=int), n / FPS, margin)


@pytest.mark.parametrize("gap", [1, 2, 5, 20])
def test_a_person_lost_for_frames_right_at_the_line_is_counted_once(gap):
    counter = LineCrossings(*LINE, memory_seconds=3.0)
    # Seen up to 4 px before the line, lost for `gap` frames, found again past it (20 frames = 2 s).
    feed(counter, walk([60, 70, 80, 90, 96, *[None] * gap, 104, 110, 120, 130]))
    assert (counter.in_count, counter.out_count) == (1, 0)


def test_a_side_is_forgotten_after_the_window():
    counter = LineCrossings(*LINE, memory_seconds=1.0)
    feed(counter, walk([80, 90, *[None] * 15, 110, 120]))  # 1.5 s unseen: it comes back as someone new
    assert (counter.in_count, counter.out_count) == (0, 0)
    feed(counter, [[]] * 30)
    assert len(counter) == 0  # nothing kept once everyone is gone


def test_jitter_on_the_line_counts_once():
    counter = LineCrossings(*LINE, memory_seconds=3.0)
    jitter = [100 + (2.0 if n % 2 else -2.0) for n in range(40)]  # a person standing on the line, box wobbling
    feed(counter, walk([70, 80, 90, *jitter, 110, 120]), margin=3.0)
    assert (counter.in_count, counter.out_count) == (1, 0)


def test_without_a_margin_the_same_jitter_counts_every_wobble():
    """The margin is what stops it: the jitter test above would fail without one."""
    counter = LineCrossings(*LINE, memory_seconds=3.0)
    feed(counter, walk([70, 80, 90, *[100 + (2.0 if n % 2 else -2.0) for n in range(40)], 110]), margin=0.0)
    assert counter.in_count + counter.out_count > 10


def test_coming_back_well_past_the_line_counts_out():
    counter = LineCrossings(*LINE, memory_seconds=3.0)
    feed(counter, walk([70, 90, 110, 130, 110, 90, 70]), margin=3.0)
    assert (counter.in_count, counter.out_count) == (1, 1)


def test_two_people_crossing_opposite_ways_one_in_one_out():
    counter = LineCrossings(*LINE, memory_seconds=3.0)
    frames = [[(7, 60.0 + 10 * n), (8, 140.0 - 10 * n)] for n in range(9)]  # they pass each other at x = 100
    frames[4] = []  # both missed at the moment they meet on the line
    feed(counter, frames, margin=3.0)
    assert (counter.in_count, counter.out_count) == (1, 1)


def test_direction_and_segment_ends_follow_supervision_line_zone():
    """Same in/out as inference's line_counter (supervision LineZone) for a crossing inside the segment; none beside it."""
    import supervision as sv

    zone = sv.LineZone(start=sv.Point(0, 100), end=sv.Point(200, 100), triggering_anchors=[sv.Position.CENTER])
    ours = LineCrossings((0, 100), (200, 100))
    for n, y in enumerate([60, 80, 120, 140]):  # moving down across a left → right line; and one beside its end
        boxes = np.array([[40, y - 5, 60, y + 5], [290, y - 5, 310, y + 5]], dtype=float)
        zone.trigger(sv.Detections(xyxy=boxes, tracker_id=np.array([1, 2])))
        ours.update(boxes.reshape(2, 2, 2).mean(axis=1), [1, 2], n / FPS)
    assert (ours.in_count, ours.out_count) == (zone.in_count, zone.out_count) != (0, 0)
    assert ours.in_count + ours.out_count == 1


def test_unconfirmed_ids_are_ignored_and_memory_is_capped():
    counter = LineCrossings(*LINE, memory_seconds=60.0, max_tracks=10)
    feed(counter, [[(-1, 80.0)], [(-1, 120.0)]])  # trackers share -1 between unconfirmed tracks
    assert (counter.in_count, counter.out_count, len(counter)) == (0, 0, 0)
    feed(counter, [[(key, 50.0)] for key in range(100)])  # an id flood within the window
    assert len(counter) == 10
