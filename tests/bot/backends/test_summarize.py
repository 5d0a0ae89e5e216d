"""The summarizer: short, deterministic, and it keeps what matters (counts, confidences, ids, line counts)."""

from __future__ import annotations

from bot.backends.base import Detection, InferenceResult
from bot.backends.summary import MAX_TOKENS, estimate_tokens, summarize, summarize_many


def _res(dets, frame_id=1, ts=100.0, **values) -> InferenceResult:
    return InferenceResult(tuple(dets), values, None, frame_id, ts, (640, 480))


def test_counts_per_class_with_top_confidences_and_tracker_ids():
    dets = [
        Detection("person", 0.92, (0, 0, 1, 1), 4),
        Detection("person", 0.87, (0, 0, 1, 1), 1),
        Detection("car", 0.76, (0, 0, 1, 1), 9),
    ]
    text = summarize(_res(dets, frame_id=1234, count_in=2, count_out=1), label="cam1")
    assert text.startswith("cam1 frame #1234 (640x480): 3 detections: 2 person (0.92, 0.87), 1 car (0.76).")
    assert "count_in=2, count_out=1" in text
    assert "Tracker ids: 1, 4, 9." in text


def test_no_detections_and_nested_values():
    text = summarize(_res([], frame_id=None, line={"count_in": 0, "count_out": 3}, zone={"time": 1.23456}))
    assert text.startswith("Image (640x480): no detections.")
    assert "line.count_in=0, line.count_out=3, zone.time=1.23" in text


def test_big_result_stays_under_the_token_budget():
    dets = [Detection(f"class_{i % 40}_with_a_long_name", 0.5 + (i % 50) / 100, (0, 0, 1, 1), i) for i in range(500)]
    values = {f"metric_{i}": i * 1.5 for i in range(100)} | {"blob": "x" * 10_000, "matrix": [[1] * 50] * 50}
    text = summarize(_res(dets, count_out=7, **values), label="warehouse-floor-east")
    assert estimate_tokens(text) <= MAX_TOKENS
    assert "500 detections" in text and "x" * 100 not in text
    # detail shrinks before the important facts go: line counts and tracker ids survive
    assert "count_out=7" in text and "+495 more" in text
    assert summarize(_res(dets, count_out=7, **values), label="warehouse-floor-east") == text  # deterministic


def test_many_frames_aggregate_max_mean_unique_ids_and_latest_line_counts():
    frames = [
        _res([Detection("person", 0.9, (0, 0, 1, 1), 1)], 10, 100.0, count_in=0, count_out=0),
        _res([Detection("person", 0.9, (0, 0, 1, 1), 1), Detection("person", 0.8, (0, 0, 1, 1), 2)], 11, 101.0,
             count_in=1, count_out=0),
        _res([Detection("person", 0.7, (0, 0, 1, 1), 3)], 12, 102.5, count_in=1, count_out=1),
    ]
    text = summarize_many(list(reversed(frames)), label="door")
    assert text.startswith("door: 3 frames #10–#12 over 2.5s.")
    assert "person max 2 mean 1.3" in text
    assert "Latest: count_in=1, count_out=1." in text
    assert "Unique tracker ids (3): 1, 2, 3." in text
    assert estimate_tokens(text) <= MAX_TOKENS


def test_many_frames_big_input_under_budget_and_empty():
    frames = [_res([Detection(f"c{j}", 0.5, (0, 0, 1, 1), i * 100 + j) for j in range(30)], i, float(i)) for i in range(50)]
    assert estimate_tokens(summarize_many(frames, label="x")) <= MAX_TOKENS
    assert summarize_many([], label="door") == "door: no results yet."


def test_token_estimate_is_conservative():
    # words, numbers and punctuation each count; never below chars/3.5
    assert estimate_tokens('{"a": 1}') == 7
    assert estimate_tokens("a" * 35) == 10


def test_seconds_in_the_zone_reach_the_model_per_object_longest_first():
    def frame(secs_12: float, secs_3: float) -> InferenceResult:
        return InferenceResult(detections=(Detection("person", 0.9, (0, 0, 5, 9), 12, secs_12),
                                           Detection("car", 0.8, (9, 0, 19, 9), 3, secs_3),
                                           Detection("person", 0.7, (30, 0, 35, 9), 40, 0.0)), frame_id=1)
    assert "In the zone: car #3 8 s, person #12 2 s." in summarize(frame(2.0, 8.4))
    many = summarize_many([frame(30.0, 8.0), frame(34.2, 0.0)])  # the car left the zone: its stay still counts
    assert "Longest in the zone: person #12 34 s, car #3 8 s." in many and "#40" not in many.split("Longest")[1]
