"""MemoryStore: where notes land, how a day reads back, concurrent appends."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from workspace.memory import MemoryStore

NOON = datetime(2026, 3, 4, 12, 30, 5, tzinfo=UTC).timestamp()


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path, clock=lambda: NOON, use_embeddings=False)


def test_observations_go_to_the_daily_log_under_their_camera(store: MemoryStore, tmp_path: Path) -> None:
    store.store("person crossed the line", "observation", camera_id="cam1")
    store.store("truck at the dock", "observation", camera_id="cam2")
    path = store.store("second person", "observation", camera_id="cam1")

    assert path == tmp_path / "memory" / "2026-03-04.md"
    text = path.read_text()
    cam1, cam2 = text.index("## cam1"), text.index("## cam2")
    assert cam1 < text.index("- 12:30:05 second person") < cam2  # appended under its own camera
    assert store.observations_by_camera("2026-03-04") == {
        "cam1": ["12:30:05 person crossed the line", "12:30:05 second person"],
        "cam2": ["12:30:05 truck at the dock"],
    }


def test_knowledge_and_preferences_go_to_knowledge_md(store: MemoryStore, tmp_path: Path) -> None:
    store.store("the dock closes at 18:00", "knowledge")
    path = store.store("keep alerts short", "preference")

    assert path == tmp_path / "memory" / "KNOWLEDGE.md"
    text = path.read_text()
    assert "## Facts\n- 2026-03-04 the dock closes at 18:00" in text
    assert "## Preferences\n- 2026-03-04 keep alerts short" in text
    assert not (tmp_path / "memory" / "2026-03-04.md").exists()


def test_daily_observations_filter_by_camera_and_day(store: MemoryStore) -> None:
    store.store("door opened", "observation", camera_id="cam1")
    store.store("van parked", "observation", camera_id="cam2")

    only_cam2 = store.get_daily_observations(camera="cam2")
    assert "van parked" in only_cam2 and "door opened" not in only_cam2
    assert "door opened" in store.get_daily_observations("2026-03-04")
    assert store.get_daily_observations("2020-01-01") == ""


def test_multiline_content_stays_one_bullet_and_bad_category_is_refused(store: MemoryStore) -> None:
    store.store("line one\n\nline two", "observation")
    assert "- 12:30:05 line one line two" in store.get_daily_observations()
    with pytest.raises(ValueError, match="unknown memory category"):
        store.store("x", "gossip")
    with pytest.raises(ValueError, match="empty"):
        store.store("   ", "observation")


def test_concurrent_appends_lose_nothing(store: MemoryStore) -> None:
    def writer(cam: str) -> None:
        for i in range(25):
            store.store(f"event {i}", "observation", camera_id=cam)

    threads = [threading.Thread(target=writer, args=(f"cam{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_cam = store.observations_by_camera()
    assert sorted(by_cam) == ["cam0", "cam1", "cam2", "cam3"]
    assert all(len(v) == 25 for v in by_cam.values())


def test_search_finds_stored_notes_by_keyword(store: MemoryStore) -> None:
    store.store("forklift FL-2207 left without a badge", "observation", camera_id="cam2")
    store.store("the cat crossed the parking lot", "observation", camera_id="cam3")

    hits = store.search("FL-2207")
    assert hits and "FL-2207" in hits[0].text
    assert hits[0].source == "2026-03-04.md" and hits[0].date == "2026-03-04"
